package workerpool

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"

	"github.com/jazz-run/jazz/bus"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/workstore"
)

// Seals. Subject permissions say who may publish on a subject, not who
// put a message there: the server itself delivers a consumer's stored
// messages to any subject its creator names (DeliverSubject), and sends
// the reply of an API request (a DIRECT.GET returns a stored message as
// it was) to any reply subject. So whoever may write a stream and create
// a consumer on it can make the server say anything anywhere. What a
// runner and a worker tell each other about a task is therefore sealed
// with the task's own key (messages.WorkTask.Key), which only they hold,
// and the seal covers the subject: a message moved to another subject,
// another task or another worker no longer verifies.

// NewTaskKey is a fresh task key.
func NewTaskKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Domains keep a seal of one kind from being taken for another.
const (
	sealMessage = "jazz work message v1"
	sealCancel  = "jazz work cancel v1"
	sealGated   = "jazz work gated v1"
)

func mac(key, domain, subject string, data []byte) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write([]byte(subject))
	h.Write([]byte{0})
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func sealOK(want, got string) bool {
	return got != "" && hmac.Equal([]byte(want), []byte(got))
}

// sealer seals the messages about a task whose key is key.
func sealer(key string) bus.Seal {
	return func(subject string, data []byte) (string, string) {
		return messages.WorkSealHeader, mac(key, sealMessage, subject, data)
	}
}

// sealed reports whether a message on subject carries the seal of key.
func sealed(key, subject string, data []byte, h bus.Header) bool {
	return key != "" && sealOK(mac(key, sealMessage, subject, data), h.Get(messages.WorkSealHeader))
}

// A record's seal is over the encoding of its fields with Seal empty,
// as the reader decoded them: what it acts on is what was sealed.

// sealCancelRecord returns c, encoded with its seal under key.
func sealCancelRecord(key string, c messages.WorkCancel) ([]byte, error) {
	c.Seal = ""
	data, err := messages.Encode(c)
	if err != nil {
		return nil, err
	}
	c.Seal = mac(key, sealCancel, workstore.CancelKey(c.TaskID), data)
	return messages.Encode(c)
}

// cancelSealed reports whether c, as decoded, was sealed under key.
func cancelSealed(key string, c messages.WorkCancel) bool {
	got := c.Seal
	c.Seal = ""
	data, err := messages.Encode(c)
	return err == nil && key != "" && sealOK(mac(key, sealCancel, workstore.CancelKey(c.TaskID), data), got)
}

// sealGatedRecord returns g, encoded with its seal under key.
func sealGatedRecord(key string, g messages.WorkGated) ([]byte, error) {
	g.Seal = ""
	data, err := messages.Encode(g)
	if err != nil {
		return nil, err
	}
	g.Seal = mac(key, sealGated, workstore.GatedKey(g.TaskID), data)
	return messages.Encode(g)
}

// gatedSealed reports whether g, as decoded, was sealed under key.
func gatedSealed(key string, g messages.WorkGated) bool {
	got := g.Seal
	g.Seal = ""
	data, err := messages.Encode(g)
	return err == nil && key != "" && sealOK(mac(key, sealGated, workstore.GatedKey(g.TaskID), data), got)
}
