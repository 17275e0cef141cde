package settings

// StateMutating lists the shell commands that change state outside the
// workspace and must be confirmed by a person: git push and each gh
// subcommand that writes, one by one. There is deliberately no `gh *`: a
// catch-all ask rule would also catch the read-only subcommands (Claude Code
// asks whenever an ask rule matches, whatever allow rule also does). `gh api`
// is here whole, since any method can write. Each renders as `Bash(C)` and
// `Bash(C *)`.
var StateMutating = []string{
	"git push",

	"gh pr create", "gh pr merge", "gh pr close", "gh pr comment", "gh pr edit",
	"gh pr review", "gh pr ready", "gh pr reopen", "gh pr lock", "gh pr unlock",
	"gh pr update-branch", "gh pr revert",

	"gh issue create", "gh issue close", "gh issue comment", "gh issue edit",
	"gh issue delete", "gh issue reopen", "gh issue transfer", "gh issue pin",
	"gh issue unpin", "gh issue lock", "gh issue unlock", "gh issue develop",

	"gh release create", "gh release delete", "gh release edit", "gh release upload",
	"gh release delete-asset",

	"gh repo create", "gh repo delete", "gh repo edit", "gh repo fork", "gh repo rename",
	"gh repo archive", "gh repo unarchive", "gh repo sync",
	"gh repo deploy-key add", "gh repo deploy-key delete",
	"gh repo autolink create", "gh repo autolink delete",

	"gh api",

	"gh run cancel", "gh run rerun", "gh run delete",
	"gh workflow run", "gh workflow enable", "gh workflow disable",
	"gh secret set", "gh secret delete",
	"gh variable set", "gh variable delete",
	"gh label create", "gh label edit", "gh label delete", "gh label clone",
	"gh gist create", "gh gist edit", "gh gist delete", "gh gist rename",
	"gh cache delete",

	"gh project create", "gh project edit", "gh project delete", "gh project close",
	"gh project copy", "gh project link", "gh project unlink", "gh project mark-template",
	"gh project field-create", "gh project field-delete",
	"gh project item-add", "gh project item-archive", "gh project item-create",
	"gh project item-delete", "gh project item-edit",

	"gh ssh-key add", "gh ssh-key delete", "gh gpg-key add", "gh gpg-key delete",

	"gh codespace create", "gh codespace delete", "gh codespace edit", "gh codespace stop",
	"gh codespace rebuild", "gh codespace ssh", "gh codespace cp", "gh codespace ports",

	"gh extension install", "gh extension upgrade", "gh extension remove",
	"gh alias set", "gh alias delete", "gh alias import",
	"gh config set",
	"gh auth login", "gh auth logout", "gh auth switch", "gh auth setup-git",
	"gh agent-task create",
}

// gitGlobalPush catches git push behind git's global options (git -C dir
// push, git -c key=value push), which `Bash(git push *)` does not. It also
// asks on a few commands that merely mention push (a commit message), which
// is the cheaper mistake.
var gitGlobalPush = []string{"Bash(git * push)", "Bash(git * push *)"}

// ReadOnly lists the gh subcommands that only read, allowed without a
// prompt. Each renders as `Bash(C)` and `Bash(C *)`. `gh auth status` is not
// here: --show-token prints the token.
var ReadOnly = []string{
	"gh pr view", "gh pr list", "gh pr diff", "gh pr checks", "gh pr status",
	"gh issue view", "gh issue list", "gh issue status",
	"gh release view", "gh release list",
	"gh repo view", "gh repo list",
	"gh run view", "gh run list", "gh run watch",
	"gh workflow view", "gh workflow list",
	"gh label list", "gh gist view", "gh gist list", "gh cache list",
	"gh search", "gh status",
	"gh ruleset list", "gh ruleset view", "gh ruleset check",
	"gh secret list", "gh variable list", "gh variable get",
	"gh project view", "gh project list", "gh project field-list", "gh project item-list",
	"gh org list",
}

// CredentialCommands print or mint the gh token and are denied outright.
var CredentialCommands = []string{"gh auth token", "gh auth refresh"}

// credentialFile is a path whose reading (and, when edit is set, writing) is
// denied to Claude Code's file tools. Claude Code also turns Read deny rules
// into the sandbox's deny-read list, so sandboxed commands cannot read them
// either. Paths use the permission-rule forms: ~/ for the home directory, //
// for an absolute path, ** for any depth.
type credentialFile struct {
	path string
	edit bool
}

// CredentialFiles are the credential and secret files of the host.
var credentialFiles = []credentialFile{
	{"~/.ssh/**", true},
	{"~/.aws/**", true},
	{"~/.config/gcloud/**", true},
	{"~/.azure/**", true},
	{"~/.kube/**", true},
	{"~/.gnupg/**", true},
	{"~/.config/gh/**", true},
	{"~/.netrc", true},
	{"~/.git-credentials", true},
	{"~/.npmrc", true},
	{"~/.pypirc", true},
	{"~/.docker/config.json", true},
	{"~/.claude/.credentials.json", true},
	{"~/.config/mitrity/**", true},
	{"//etc/mitrity/**", true},
	// Project secrets: reading is denied, writing (creating a .env from a
	// template) is not. This also denies .env.example; remove the rule
	// knowingly if a project needs the model to read its template.
	{"**/.env", false},
	{"**/.env.*", false},
}

// bash renders `Bash(C)` and `Bash(C *)` for each command.
func bash(cmds []string) []string {
	out := make([]string, 0, 2*len(cmds))
	for _, c := range cmds {
		out = append(out, "Bash("+c+")", "Bash("+c+" *)")
	}
	return out
}

// askRules are the rendered permissions.ask.
func askRules() []string { return append(bash(StateMutating), gitGlobalPush...) }

// denyRules are the rendered permissions.deny.
func denyRules() []string {
	out := bash(CredentialCommands)
	for _, f := range credentialFiles {
		out = append(out, "Read("+f.path+")")
		if f.edit {
			out = append(out, "Edit("+f.path+")")
		}
	}
	return out
}

// allowRules are the rendered permissions.allow.
func allowRules() []string { return bash(ReadOnly) }
