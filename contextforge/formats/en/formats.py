# One way to write a day and a moment in English wherever the dashboard shows one: templates ask for
# DATE_FORMAT or DATETIME_FORMAT, and the short names mean the same (Django's defaults differ).
DATE_FORMAT = "M j, Y"
DATETIME_FORMAT = "M j, Y, H:i"
SHORT_DATE_FORMAT = DATE_FORMAT
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
