package tools

import (
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

func printer() *message.Printer { return message.NewPrinter(language.English) }
