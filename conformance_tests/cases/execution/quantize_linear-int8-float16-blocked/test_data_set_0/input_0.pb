
BxJ0·оf╘)EЕP)пуPло╠Q7KЬC▀Q=K╚PИляO╔MУлЁQYн}MBIuJтEМ3