
BxJ0…PæC#IÁË›Ë³GD'ÑœLPÝFLÉôÌt@*MIvFÐÎPÇÇGÇ~ËËMQ