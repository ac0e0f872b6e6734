# One way to write a day and a moment in English, wherever the dashboard shows one (|date:"DATE_FORMAT",
# |date:"DATETIME_FORMAT"); Django's own defaults mix "Dec. 4, 2026" with "12/04/2026".
DATE_FORMAT = "j M Y"
DATETIME_FORMAT = "j M Y, H:i"
SHORT_DATE_FORMAT = DATE_FORMAT
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
