
BxJ0SÍ=g±“ÈDzEjÈ‚Ð`ÐL@ÎiÁšÅDËŸÉ.KQKˆHÄÂ“FFõÏ_PñD