
ByJ¾dìÙBÛpubY)d<Îgö¤è?d×[Fô