package approvals_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/messages"
)

// A signed answer answers exactly the question it was signed for: any
// other run, question id or question text, any unknown signer, a stale
// or reused one, or bytes that do not verify, is refused for its reason.
func TestVerifyAnswerClasses(t *testing.T) {
	alice := newParty(t, "alice", "read-only", false)
	mallory := newParty(t, "mallory", "high-risk", false)
	reg, err := approvals.NewRegistry([]approvals.Approver{alice.a})
	if err != nil {
		t.Fatal(err)
	}
	q := messages.UserInputRequired{Place: messages.Place{RunID: "run-1", AgentName: "coder"}, RequestID: "ui-1",
		Question: "Which database?", Suggestions: []messages.Suggestion{{Value: "staging"}, {Value: "prod"}}, AllowCustom: true}
	now := time.Now()
	sign := func(p party, run string, q messages.UserInputRequired, resp string, at time.Time) approvals.Envelope {
		env, err := approvals.SignAnswer(p.kp, run, q, resp, at, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	seen := approvals.NonceSet{}
	good := sign(alice, "run-1", q, "staging", now)
	a, who, err := approvals.VerifyAnswer(good, reg, "run-1", q, now, seen)
	if err != nil || a.Response != "staging" || who.Name != "alice" {
		t.Fatalf("a good answer: %+v %v %v", a, who, err)
	}
	other := q
	other.RequestID = "ui-2"
	reworded := q
	reworded.Question = "Which database may I drop?"
	resuggested := q
	resuggested.Suggestions = []messages.Suggestion{{Value: "prod"}, {Value: "staging"}}
	tampered := sign(alice, "run-1", q, "staging", now)
	tampered.Payload = []byte(strings.Replace(string(tampered.Payload), "staging", "prod", 1))
	for name, c := range map[string]struct {
		env    approvals.Envelope
		q      messages.UserInputRequired
		reason string
	}{
		"replayed":          {good, q, approvals.ReasonReplay},
		"other run":         {sign(alice, "run-2", q, "x", now), q, approvals.ReasonOtherRun},
		"other question id": {sign(alice, "run-1", q, "x", now), other, approvals.ReasonOtherRequest},
		"other text":        {sign(alice, "run-1", q, "x", now), reworded, approvals.ReasonShownMismatch},
		"other suggestions": {sign(alice, "run-1", q, "x", now), resuggested, approvals.ReasonShownMismatch},
		"unknown signer":    {sign(mallory, "run-1", q, "x", now), q, approvals.ReasonUnknownSigner},
		"expired":           {sign(alice, "run-1", q, "x", now.Add(-2*time.Minute)), q, approvals.ReasonExpired},
		"tampered":          {tampered, q, approvals.ReasonBadSignature},
		"a decision":        {mustDecision(t, alice), q, approvals.ReasonMalformed},
	} {
		if _, _, err := approvals.VerifyAnswer(c.env, reg, "run-1", c.q, now, seen); err == nil {
			t.Errorf("%s: accepted", name)
		} else if got := refusal(t, err); got != c.reason {
			t.Errorf("%s: refused for %s (%v), want %s", name, got, err, c.reason)
		}
	}
	if _, err := approvals.SignAnswer(alice.kp, "run-1", q, strings.Repeat("x", approvals.MaxAnswer+1), now, 0); err == nil {
		t.Error("an oversized answer was signed")
	}
}

func mustDecision(t *testing.T, p party) approvals.Envelope {
	env, err := approvals.SignDecision(p.kp, approvals.Decision{RunID: "run-1", RequestID: "ui-1"}, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// Property: every field a person reads — any exported field of the
// request or question, found by reflection so a field added later is
// covered too — changes the hash they sign. Only routing (the trace) and
// what the hash itself binds separately are exempt.
func TestHashesCoverEveryField(t *testing.T) {
	req := approvals.Request{}
	fill(reflect.ValueOf(&req).Elem())
	mutateEach(t, "request", &req, nil, func() string { h, _ := approvals.ShownHash(req); return h })
	q := messages.UserInputRequired{}
	fill(reflect.ValueOf(&q).Elem())
	mutateEach(t, "question", &q, map[string]bool{"Trace": true, "Place.RunID": true}, func() string {
		h, _ := approvals.QuestionHash("run-1", q)
		return h
	})
}

// fill gives every settable leaf a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(1)
	case reflect.Float64:
		v.SetFloat(1)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage
			v.SetBytes([]byte(`{"k":"v"}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	}
}

// mutateEach changes each leaf of *ptr in turn and checks hash changes.
func mutateEach(t *testing.T, what string, ptr any, exempt map[string]bool, hash func() string) {
	t.Helper()
	root := reflect.ValueOf(ptr).Elem()
	want := hash()
	if want == "" {
		t.Fatalf("%s: no hash", what)
	}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		if exempt[path] {
			return
		}
		switch {
		case v.Kind() == reflect.Struct && v.Type() != reflect.TypeOf(time.Time{}):
			for i := 0; i < v.NumField(); i++ {
				if f := v.Type().Field(i); f.IsExported() {
					walk(v.Field(i), strings.TrimPrefix(path+"."+f.Name, "."))
				}
			}
			return
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
			walk(v.Index(0), path)
			return
		}
		old := reflect.New(v.Type()).Elem()
		old.Set(v)
		switch v.Kind() {
		case reflect.String:
			v.SetString("changed")
		case reflect.Bool:
			v.SetBool(false)
		case reflect.Int, reflect.Int64, reflect.Int32:
			v.SetInt(2)
		case reflect.Float64:
			v.SetFloat(2)
		case reflect.Slice:
			v.SetBytes([]byte(`{"k":"w"}`))
		case reflect.Struct: // time
			v.Set(reflect.ValueOf(time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)))
		case reflect.Map:
			return // no maps in either today; fill covers them if added
		}
		if got := hash(); got == want {
			t.Errorf("%s: changing %s leaves its hash as it was", what, path)
		}
		v.Set(old)
	}
	walk(root, "")
}
