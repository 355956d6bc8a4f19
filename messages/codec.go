package messages

import (
	"encoding/json"
	"fmt"
)

// Encode is the one codec for messages on the bus: JSON, so a bridge in any
// language can read and write them.
func Encode(msg any) ([]byte, error) {
	data, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", msg, err)
	}
	return data, nil
}

// Decode reads a message of type T written by Encode.
func Decode[T any](data []byte) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("decode %T: %w", v, err)
	}
	return v, nil
}
