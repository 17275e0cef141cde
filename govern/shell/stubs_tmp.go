package shell

type unwrapped struct {
	Wrapper   string
	Inners    [][]Word
	Code      []Word
	Assigns   []Word
	Unsets    []string
	Opaque    string
	Privilege bool
	StdinArgs bool
}

var wrapperNames = map[string]bool{}

func unwrap(argv []Word) (unwrapped, bool) { return unwrapped{}, false }

type hazard struct {
	Kind   FlagKind
	Detail string
	Code   *Word
}

func toolHazards(argv []Word) []hazard        { return nil }
func dangerousEnv(name string) (string, bool) { return "", false }
