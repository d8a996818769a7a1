
BxJ0×=ÍÈ~8IDDD¬<Þ½z@’ÂmÂæJFDÃ‚Á!<
ÄFÈpH	C&Ç²CS;»