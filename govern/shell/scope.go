package shell

// layered is a map with subshell scoping: a subshell pushes a layer, writes
// go to the top layer, and popping it forgets them. Reads look down the
// stack. It avoids copying every variable at each pipeline stage.
type layered[V any] struct {
	maps []map[string]V
}

func newLayered[V any]() *layered[V] {
	return &layered[V]{maps: []map[string]V{{}}}
}

func (l *layered[V]) get(k string) (V, bool) {
	for i := len(l.maps) - 1; i >= 0; i-- {
		if v, ok := l.maps[i][k]; ok {
			return v, true
		}
	}
	var zero V
	return zero, false
}

func (l *layered[V]) set(k string, v V) {
	top := len(l.maps) - 1
	if l.maps[top] == nil {
		l.maps[top] = map[string]V{}
	}
	l.maps[top][k] = v
}

func (l *layered[V]) push() { l.maps = append(l.maps, nil) }
func (l *layered[V]) pop()  { l.maps = l.maps[:len(l.maps)-1] }

// each calls fn once for every visible key, with its visible value.
func (l *layered[V]) each(fn func(string, V)) {
	seen := map[string]bool{}
	for i := len(l.maps) - 1; i >= 0; i-- {
		for k, v := range l.maps[i] {
			if !seen[k] {
				seen[k] = true
				fn(k, v)
			}
		}
	}
}
