BysJÅf
Â{nþI\”