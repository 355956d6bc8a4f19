package workerpool

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"

	"github.com/jazz-run/jazz/messages"
)

// actionOf is the digest that binds a decision to the one call it
// decided (WorkDecision.Action): the agent, the model's call id, the
// tool, the tool that runs and the arguments it runs with. The runner
// digests the request as it checked it, the worker the request its call
// actor waits on; an approval whose digest is not the pending call's runs
// nothing. The arguments are digested as the bus carries them (compact,
// as json.Marshal writes a RawMessage), so the bytes the worker's call
// actor holds and the bytes the runner read differ in nothing but spacing
// and escapes. "" is a request whose arguments are not JSON, which no
// approval runs.
func actionOf(r messages.ApprovalRequired) string {
	args, err := json.Marshal(r.ExecuteArgs)
	if err != nil {
		return ""
	}
	h := sha256.New()
	for _, f := range []string{r.Place.AgentID, r.ToolCallID, r.ToolName, r.ExecuteToolName, string(args)} {
		// Each field with its length: no two requests write the same bytes.
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}
