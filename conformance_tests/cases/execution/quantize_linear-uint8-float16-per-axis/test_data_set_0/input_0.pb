
BxJ0чEрBrД>HКXѕЦБ°?Л@¬B!БgЕгЕBЗ#ГZВиAєGЎEТ®П?wFPЗаH