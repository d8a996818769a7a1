ByJY
