
BxJ0ÌAEACoI‡Ì“D$ÈæBÈÎb(ÅÜÊíÄÐLvL«Ê¶À&N¿ÍBÏóÌDæÉGË