
ByJ0DNÙW-PêUÇOEPtV>PéPÈSÓU$WÆC>TUTBWV4U`U(UNËW