package secrets

import "encoding/json"

// FromDocument is fromDocument, for the external tests.
func FromDocument(d any) []string { return fromDocument(d) }

// Walks says whether fromDocument takes d without the round trip.
func Walks(d any) bool {
	w := docWalker{}
	return w.walkValue(d)
}

// RoundTrip is what Collect did with a document before fromDocument:
// marshal it, and FromJSON what came out.
func RoundTrip(d any) []string {
	b, err := json.Marshal(d)
	if err != nil {
		return nil
	}
	return FromJSON(b)
}

// ReplaceAll is String without the scan that skips text holding no
// secret: the Replacer over every form, always.
func (r *Redactor) ReplaceAll(s string) string { return r.repl.Replace(s) }

// WithBeforeOpen is g running f in Open between judging the path and
// opening it.
func WithBeforeOpen(g Guard, f func()) Guard {
	g.beforeOpen = f
	return g
}
