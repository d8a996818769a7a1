
BxJ0êRO¯ÕÉNVõR•U	ÖäÕÿÐµÑ±UõLVÑpQGH’WÁM{T/VÂÔ4Ú¤Î–L