package upstream

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
)

// TestSeenFileAcrossGateways: the hash a first gateway saw is what a second
// one (a later session of a stdio client) compares with: the same
// definition is served without a judgement, a changed one is withheld
// with the first hash as previous; an approval is kept for the next.
func TestSeenFileAcrossGateways(t *testing.T) {
	t.Parallel()
	store := SeenFile{Path: filepath.Join(t.TempDir(), SeenFileName)}
	none := func(string) bool { return false }
	tool := func(desc string) *mcp.Tool {
		return &mcp.Tool{Name: "notes", Description: desc, InputSchema: map[string]any{"type": "object"}}
	}
	first := NewCatalog(nil)
	assert.NilError(t, first.SetStore(store))
	served, js := first.Judge("srv", []*mcp.Tool{tool("Lists notes.")}, none)
	assert.Check(t, is.Len(served, 1))
	assert.Check(t, is.Len(js, 1))
	assert.Check(t, is.Equal(js[0].State, audit.DefinitionFirstSeen))
	firstHash := js[0].SHA256

	same := NewCatalog(nil)
	assert.NilError(t, same.SetStore(store))
	served, js = same.Judge("srv", []*mcp.Tool{tool("Lists notes.")}, none)
	assert.Check(t, is.Len(served, 1))
	assert.Check(t, is.Len(js, 0), "a definition seen by an earlier gateway is not first seen again: %v", js)

	changed := NewCatalog(nil)
	assert.NilError(t, changed.SetStore(store))
	served, js = changed.Judge("srv", []*mcp.Tool{tool("Lists notes. Revision 1.")}, none)
	assert.Check(t, is.Len(served, 0))
	assert.Assert(t, is.Len(js, 1))
	assert.Check(t, is.Equal(js[0].State, audit.DefinitionWithheld))
	assert.Check(t, is.Equal(js[0].Reason, govern.ReasonToolDefinitionChanged))
	assert.Check(t, is.Equal(js[0].Previous, firstHash))

	assert.NilError(t, changed.Approve("srv__notes", js[0].SHA256))
	next := NewCatalog(nil)
	assert.NilError(t, next.SetStore(store))
	served, _ = next.Judge("srv", []*mcp.Tool{tool("Lists notes. Revision 1.")}, none)
	assert.Check(t, is.Len(served, 1), "the approval is kept for the next gateway")

	fi, err := os.Stat(store.Path)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(fi.Mode().Perm(), os.FileMode(0o600)))
}

// TestSeenFileFirstWins: gateways recording the same name at once agree
// on one first hash.
func TestSeenFileFirstWins(t *testing.T) {
	t.Parallel()
	store := SeenFile{Path: filepath.Join(t.TempDir(), SeenFileName)}
	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := audit.HashOf([]byte{byte(i)})
			s, err := store.First("srv__x", h)
			assert.Check(t, err)
			got[i] = s
		}()
	}
	wg.Wait()
	for _, g := range got {
		assert.Check(t, is.Equal(g, got[0]))
	}
	m, err := store.Load()
	assert.NilError(t, err)
	assert.Check(t, is.Equal(m["srv__x"], got[0]))
}

// TestSeenFileUnreadable: a file that is not the gateway's withholds every
// definition not seen before (audit_unavailable), never trusts it.
func TestSeenFileUnreadable(t *testing.T) {
	t.Parallel()
	store := SeenFile{Path: filepath.Join(t.TempDir(), SeenFileName)}
	assert.NilError(t, os.WriteFile(store.Path, []byte("not json"), 0o600))
	c := NewCatalog(nil)
	assert.Check(t, c.SetStore(store) != nil)
	served, js := c.Judge("srv", []*mcp.Tool{{Name: "x", InputSchema: map[string]any{"type": "object"}}}, func(string) bool { return false })
	assert.Check(t, is.Len(served, 0))
	assert.Assert(t, is.Len(js, 1))
	assert.Check(t, is.Equal(js[0].Reason, govern.ReasonAuditUnavailable))
}
