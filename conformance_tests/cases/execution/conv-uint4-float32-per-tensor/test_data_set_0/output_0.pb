ByJ&hˆXWx(”‰3ES¦wyI×jU§Pz2îÿþíÊýËüïÍÝ
