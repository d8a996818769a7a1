BaJA3з!╙КfЦkoзыw─[R
nH°Д