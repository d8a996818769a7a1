
BxJ0zK“ÍŸLÍEžIÞË[ÅqÎ
¾VÌªÌèL§F’ÀÒFÉGÌ¯LœÊkI>DµÍ¥ÐÙF