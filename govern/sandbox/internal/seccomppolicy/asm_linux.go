package seccomppolicy

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// asm is a filter under construction whose jumps name labels. Jumps go
// forward only; assemble resolves them, and refuses a conditional jump
// further than its 8-bit offset reaches.
type asm struct {
	insts  []bpf.Instruction
	jumps  map[int][2]string // instruction -> labels of its true and false branches ("" is the next one)
	labels map[string]int
	err    error
}

func newAsm() *asm {
	return &asm{jumps: map[int][2]string{}, labels: map[string]int{}}
}

func (p *asm) emit(insts ...bpf.Instruction) { p.insts = append(p.insts, insts...) }

func (p *asm) ret(v uint32) { p.emit(bpf.RetConstant{Val: v}) }

// jump tests the accumulator against val: to label t when it holds, else
// to label f.
func (p *asm) jump(cond bpf.JumpTest, val uint32, t, f string) {
	p.jumps[len(p.insts)] = [2]string{t, f}
	p.emit(bpf.JumpIf{Cond: cond, Val: val})
}

// goTo jumps to label l unconditionally.
func (p *asm) goTo(l string) {
	p.jumps[len(p.insts)] = [2]string{l}
	p.emit(bpf.Jump{})
}

// label names the next instruction.
func (p *asm) label(name string) {
	if _, dup := p.labels[name]; dup && p.err == nil {
		p.err = fmt.Errorf("seccomp: label %s defined twice", name)
	}
	p.labels[name] = len(p.insts)
}

func (p *asm) assemble() ([]bpf.RawInstruction, error) {
	if p.err != nil {
		return nil, p.err
	}
	skip := func(from int, l string) (uint32, error) {
		if l == "" {
			return 0, nil
		}
		to, ok := p.labels[l]
		if !ok {
			return 0, fmt.Errorf("seccomp: no label %s", l)
		}
		if to <= from {
			return 0, fmt.Errorf("seccomp: jump back to %s", l)
		}
		return uint32(to - from - 1), nil
	}
	for i, ls := range p.jumps {
		t, err := skip(i, ls[0])
		if err != nil {
			return nil, err
		}
		f, err := skip(i, ls[1])
		if err != nil {
			return nil, err
		}
		switch in := p.insts[i].(type) {
		case bpf.Jump:
			in.Skip = t
			p.insts[i] = in
		case bpf.JumpIf:
			if t > 255 || f > 255 {
				return nil, fmt.Errorf("seccomp: jump from %d to %s or %s is too far", i, ls[0], ls[1])
			}
			in.SkipTrue, in.SkipFalse = uint8(t), uint8(f)
			p.insts[i] = in
		}
	}
	raw, err := bpf.Assemble(p.insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assembling BPF: %w", err)
	}
	return raw, nil
}
