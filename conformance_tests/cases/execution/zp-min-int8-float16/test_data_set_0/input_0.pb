
BxJ0ÚME`LRÈ´L{ÌëÈ'BÇOÏfLñÉBÍâÉoIdGFÅgÌÌõKý¸}HjF