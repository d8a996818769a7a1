
ByJ0ìUúEDShG L7N9`STT„DrV†V§OÍWµW"UÉW„QìQ±PUªL—Q