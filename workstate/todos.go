package workstate

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
)

// Todo is one item of manage_todos' list.
type Todo struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
}

// TodosPath is where the list lives ("" without a conversation).
func (s Store) TodosPath() string {
	p, _ := s.path(TodosFile)
	return p
}

// SaveTodos replaces the list, atomically.
func (s Store) SaveTodos(ctx context.Context, todos []Todo) error {
	data, err := json.MarshalIndent(todos, "", "  ")
	if err != nil {
		return err
	}
	data = s.redact(data)
	if len(data) > MaxStateBytes {
		return fmt.Errorf("the list is %d bytes; the limit is %d", len(data), MaxStateBytes)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, unlock, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.writeAtomic(filepath.Join(dir, TodosFile), append(data, '\n'))
}

// Todos reads the list; a missing one is empty.
func (s Store) Todos(ctx context.Context) ([]Todo, error) {
	path, err := s.readPath(TodosFile)
	if err != nil {
		return nil, err
	}
	data, err := read(ctx, path, MaxStateBytes)
	if err != nil || data == nil {
		return nil, err
	}
	var out []Todo
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("todo file %s: %w", path, err)
	}
	return out, nil
}
