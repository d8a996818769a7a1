
BxJ0ÏÀáA6H7¿öD>ÂG9DóB~ºvÄ<?‹ÀBÖFÞÆÄGLÁfFŒBIHC¶¾