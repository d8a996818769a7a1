
ByJ0ÍÍ­=ÿÇAõÉ.ÄÇM_C®LyBìÉÍÀLÉlÇÙM¾@@AyËÿEZGV=6P¡E