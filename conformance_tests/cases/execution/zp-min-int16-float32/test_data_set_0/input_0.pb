BxJ`¼†Â^ÎOÂoËÂ¬_ÂÖ BZC×ÁN4§BN³å>zëXÁõÀApˆAûâ6Â$F
A)ÞÁÞÂ+LBo†¶AÁH¦ÁØ7’B{ó™AZ¬”A·´BƒÅBaLB