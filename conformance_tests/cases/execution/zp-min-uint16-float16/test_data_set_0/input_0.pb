
BxJ0B—SF—i—Ü–…V’÷ª;Q∫—O÷|P¡</LFN]”ïO,T…UÚYí‘ÊQZVû“