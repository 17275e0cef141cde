package shell

// layered is a map with subshell scoping: a subshell pushes a layer, writes
// go to the top layer, and popping it forgets them. Reads look down the
// stack. It avoids copying every variable at each pipeline stage.
//
// A layer pushed as a barrier models a new process: below it, only the
// values keep reports true for (exported variables) remain visible.
type layered[V any] struct {
	maps     []map[string]V
	barriers []bool
	keep     func(V) bool
	// gens counts, per layer, the writes that changed what a key shows
	// (same tells; nil: every write does): see version.
	gens []int
	same func(old, new V) bool
}

func newLayered[V any](keep func(V) bool) *layered[V] {
	return &layered[V]{maps: []map[string]V{{}}, barriers: []bool{false}, keep: keep, gens: []int{0}}
}

// depth is the number of layers; version(depth) changes exactly when a
// write into one of the bottom depth layers changed what a key shows
// (writes into layers above, which a pop forgets, do not count).
func (l *layered[V]) depth() int { return len(l.maps) }

func (l *layered[V]) version(depth int) int {
	n := 0
	for _, g := range l.gens[:depth] {
		n += g
	}
	return n
}

func (l *layered[V]) get(k string) (V, bool) {
	crossed := false
	for i := len(l.maps) - 1; i >= 0; i-- {
		if v, ok := l.maps[i][k]; ok {
			if crossed && !l.keep(v) {
				break
			}
			return v, true
		}
		crossed = crossed || l.barriers[i]
	}
	var zero V
	return zero, false
}

func (l *layered[V]) set(k string, v V) {
	top := len(l.maps) - 1
	if old, ok := l.get(k); !ok || l.same == nil || !l.same(old, v) {
		l.gens[top]++
	}
	if l.maps[top] == nil {
		l.maps[top] = map[string]V{}
	}
	l.maps[top][k] = v
}

func (l *layered[V]) push(barrier bool) {
	l.maps = append(l.maps, nil)
	l.barriers = append(l.barriers, barrier)
	l.gens = append(l.gens, 0)
}

func (l *layered[V]) pop() {
	l.maps = l.maps[:len(l.maps)-1]
	l.barriers = l.barriers[:len(l.barriers)-1]
	l.gens = l.gens[:len(l.gens)-1]
}

// each calls fn once for every visible key, with its visible value.
func (l *layered[V]) each(fn func(string, V)) {
	seen := map[string]bool{}
	crossed := false
	for i := len(l.maps) - 1; i >= 0; i-- {
		for k, v := range l.maps[i] {
			if seen[k] {
				continue
			}
			seen[k] = true
			if !crossed || l.keep(v) {
				fn(k, v)
			}
		}
		crossed = crossed || l.barriers[i]
	}
}

// top returns k's entry in the top layer only.
func (l *layered[V]) top(k string) (V, bool) {
	v, ok := l.maps[len(l.maps)-1][k]
	return v, ok
}

// del removes k from the top layer, uncovering any value below it.
func (l *layered[V]) del(k string) {
	delete(l.maps[len(l.maps)-1], k)
	l.gens[len(l.gens)-1]++
}
