package shell

import "strings"

// Traps. A trap's code runs when its condition fires, not where it is set:
// EXIT when the shell (or the subshell that set it) ends — at the end of
// the text, or at an exit or errexit anywhere after — and DEBUG, ERR,
// RETURN and signals before or after any later command. The walker walks
// the code twice, both bounded:
//   - where it is set (trap.go's caller), with the variables as they are
//     then: what it may do at the next command, and what it leaves
//     behind for the code after it (an assignment there is conditional);
//   - once more when the scope that set it ends (fireTraps), in a state
//     that covers every point at which it could fire: each variable
//     assigned anywhere after the trap was set is unknown there, and
//     tainted if any of those assignments carried a credential (or it
//     carries one at the end); positional parameters are tainted if a
//     credential was ever put into them; a function the code calls is
//     walked under every definition the text gives that name.
// Walking the code again before every later command would be exact, and
// cost the square of the text. One thing the second walk cannot give back
// to the code that ran before: a DEBUG, ERR, RETURN or signal trap that,
// in that state, assigns a credential to a variable may hand it to a later
// command unseen, which is opaque.

// trapDef is one trap the text sets.
type trapDef struct {
	code     Word
	fr       frame
	pos      Pos
	since    int  // w.seq when it was set
	layer    int  // the scope it was set in (len(w.vars.maps))
	exitOnly bool // only EXIT: nothing runs after it in its shell
}

// trapState is what the second walk needs to know of what happened after
// each trap was set.
type trapState struct {
	seq int
	// assigned and tainted hold, per variable, the seq of its last
	// assignment and of its last assignment of a credential.
	assigned, tainted map[string]int
	forgot            int // the seq of the last forgetVars
	posEver           bool
	traps             []*trapDef
	fired             map[string]int // code text -> the since it was fired with
	firing            *trapDef
	firingTaint       string
}

// setTrap records a trap set with static code, for fireTraps.
func (w *walker) setTrap(code Word, signals []arg, pos Pos, fr frame) {
	exitOnly := len(signals) > 0
	for _, s := range signals {
		switch strings.ToUpper(strings.TrimPrefix(strings.ToUpper(s.Value), "SIG")) {
		case "EXIT", "0":
		default:
			exitOnly = false
		}
		if s.Dynamic {
			exitOnly = false
		}
	}
	ts := &w.trap
	if ts.assigned == nil {
		ts.assigned, ts.tainted, ts.fired = map[string]int{}, map[string]int{}, map[string]int{}
	}
	layer := len(w.vars.maps)
	for _, t := range ts.traps {
		if t.code.Value == code.Value && t.layer == layer && t.fr.dialect == fr.dialect {
			t.exitOnly = t.exitOnly && exitOnly
			return // set earlier, so fired in a state that covers this one
		}
	}
	ts.traps = append(ts.traps, &trapDef{code: code, fr: fr, pos: pos, since: ts.seq, layer: layer, exitOnly: exitOnly})
}

// noteAssign records an assignment for the traps set before it.
func (w *walker) noteAssign(name string, tainted bool) {
	ts := &w.trap
	if ts.assigned == nil {
		return // no trap set yet
	}
	ts.seq++
	ts.assigned[name] = ts.seq
	if tainted {
		ts.tainted[name] = ts.seq
		if ts.firing != nil && !ts.firing.exitOnly && ts.firingTaint == "" {
			ts.firingTaint = name
		}
	}
}

// noteForget records that something assigned variables it did not name.
func (w *walker) noteForget() {
	if w.trap.assigned != nil {
		w.trap.seq++
		w.trap.forgot = w.trap.seq
	}
}

// fireTraps walks, once more, the traps set in scope layer or deeper,
// as the scope ends.
func (w *walker) fireTraps(layer int) {
	ts := &w.trap
	for len(ts.traps) > 0 {
		var fire, keep []*trapDef
		for _, t := range ts.traps {
			if t.layer >= layer {
				fire = append(fire, t)
			} else {
				keep = append(keep, t)
			}
		}
		if len(fire) == 0 {
			return
		}
		ts.traps = keep
		for _, t := range fire {
			if s, ok := ts.fired[t.code.Value]; ok && s <= t.since {
				continue // already walked in a state that covers this one
			}
			ts.fired[t.code.Value] = t.since
			w.fireTrap(t)
		}
	}
}

func (w *walker) fireTrap(t *trapDef) {
	ts := &w.trap
	c := t.fr
	c.cond = true
	c.posTaint = c.posTaint || w.posTainted || ts.posEver
	prev, prevTaint := ts.firing, ts.firingTaint
	ts.firing, ts.firingTaint = t, ""
	w.scope(false, func() {
		if ts.forgot > t.since {
			w.forgetVars()
		}
		for name, s := range ts.assigned {
			if s <= t.since {
				continue
			}
			old, _ := w.vars.get(name)
			w.vars.set(name, &value{tainted: ts.tainted[name] > t.since || old != nil && old.tainted, exported: old != nil && old.exported, ref: old != nil && old.ref, nameref: refTarget(old)})
		}
		w.nested(t.code, t.fr.dialect, t.pos, c, "trap, when it fires")
	})
	if ts.firingTaint != "" {
		w.flag(FlagOpaque, t.pos, "the trap set here assigns a credential to %s when it fires, which can be before any later command: where that value goes next cannot be followed (assign it in the trap only from variables set before the trap, or use an EXIT trap)", ts.firingTaint)
	}
	ts.firing, ts.firingTaint = prev, prevTaint
}

func refTarget(v *value) string {
	if v == nil {
		return ""
	}
	return v.nameref
}

// trapFuncs walks, in a trap's second walk, the other definitions a
// function name has had: the trap may fire while any of them is current.
func (w *walker) trapFuncs(name string, args []arg, fr frame) {
	if w.trap.firing == nil {
		return
	}
	cur := w.fn(name)
	for _, def := range w.declared {
		if def != cur && def.decl.Name != nil && def.decl.Name.Value == name {
			w.callFunc(def, args, fr)
		}
	}
}
