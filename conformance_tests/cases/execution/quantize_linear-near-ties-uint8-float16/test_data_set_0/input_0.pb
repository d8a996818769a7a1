
BxJ0]ÍÇÉZÄJÍmK'ÆáÈäÍ¿ÐAhÐ
Î”Ë ÉSI@EÐÍrP¿Pg=…ÐqMñÎ”K