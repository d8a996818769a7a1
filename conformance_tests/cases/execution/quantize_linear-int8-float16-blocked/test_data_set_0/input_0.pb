
BxJ0·оf╘)EЕP)поPло╠Q7KЬC▀Q=K╚PИляO╔MУлЁQYн}MBIuJтEМ3