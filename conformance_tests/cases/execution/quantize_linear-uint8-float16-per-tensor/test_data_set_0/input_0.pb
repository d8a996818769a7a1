
BxJ0O5 ?Fº»J∆}Ã" AJÒK„Ev¡g…tM;GDI5…%JﬂÀ—í…:æKFAÁº