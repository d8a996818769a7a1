BxsJÂ
fÅþn{”\I