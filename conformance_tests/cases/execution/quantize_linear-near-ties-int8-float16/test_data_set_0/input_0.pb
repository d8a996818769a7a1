
BxJ0Î?hÐPÏGÐM…P>ÏþO×LÁƒM³ÁNGHƒÍCNGKÊ>OPÏ_ÐÊÎŠO