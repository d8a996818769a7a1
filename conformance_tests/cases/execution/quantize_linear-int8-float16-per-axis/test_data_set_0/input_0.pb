
BxJ0ÈÉìÌ(ÍÜD¥JB¢Ë¿D(ÈÇN	ÊOFGF÷ÀÿÂÊÇeDsOÎL{AûJôÅh°