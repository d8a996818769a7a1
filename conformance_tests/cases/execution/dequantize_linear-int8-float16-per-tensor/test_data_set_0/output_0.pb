
ByJ0PÏäÑ€Â6Ï]ÓDL€Â×ÑÒèÒxD°ÉfÒDLNHM…PÎ€F2Î|IÑPHM