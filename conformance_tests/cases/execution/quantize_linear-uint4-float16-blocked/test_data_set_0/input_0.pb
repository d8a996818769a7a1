
BxJ0æ»2CÀÈ{¾È)F7²éIù¶L·ÈOD%FSGàGÓDßËT´ŸIyL²Èj½>Â¡M