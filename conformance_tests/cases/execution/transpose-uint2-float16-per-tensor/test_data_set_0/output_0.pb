ByJYGnºÃ
