
BxJ0.EŒO^BùI“QÀ·H È–ÌBÌP¢ÉDPsÔRwB&BµÆÃ77Ê“OÈ0À\P