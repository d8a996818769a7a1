
BxJ0…PæC#IÇË›Ë³GD'ÑœLPÝFMÉôÌt@*MIvFÐÎPÇÇGÇ~ËËMQ