
ByJ0€¹üÀFJ¬IÒG6D€¹öF"GHæD0Â(=Ð¼þG8ÃIˆ¾öF <àº–E´BdK