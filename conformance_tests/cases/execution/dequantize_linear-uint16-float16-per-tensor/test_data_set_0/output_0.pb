
ByJ0é<ˆÁÎBBH0Å!D+GnÆŠDRHjE>@@9vEâ<¿‰BH4µAdÅ¥ÁF°5