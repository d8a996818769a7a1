
BxJ0ÕFDeÆmËðÊCÌvÌALBÊ~ÆZÄIÅ­IJÌVH)ÅQÊL‚Í{ÎOXÌOM