package shellguard

import (
	"regexp"
	"strings"
	"sync"
)

// Rule is one denylist entry: a pattern over the command text and the
// reason quoted in the block message.
type Rule struct {
	// Num is the rule's number in shell-safety.md §2 (1–59).
	Num int
	// Reason names the construct and its category; it has no final period.
	Reason string
	// TempExempt marks the rules the mktemp/$TMPDIR carve-out (§3) skips.
	TempExempt bool

	re *regexp.Regexp
	// match replaces re for the one rule RE2 cannot say (the fork bomb
	// needs a back-reference).
	match func(string) bool
}

// Matches reports whether the rule's pattern occurs in command, ignoring
// the temp carve-out.
func (r Rule) Matches(command string) bool {
	if r.match != nil {
		return r.match(command)
	}
	return r.re.MatchString(command)
}

// The spec's building blocks, spelled once.
const (
	shellNames      = `(?:sh|bash|zsh|fish|python\d?)`
	readers         = `(?:cat|tac|less|more|head|tail|awk|grep|strings|od|xxd|nl|cut|sed)`
	readersNoCutSed = `(?:cat|tac|less|more|head|tail|awk|grep|strings|od|xxd|nl)`
	sensitiveEtc    = `/etc/(?:passwd|shadow|sudoers)\b`
	secretFiles     = `(?:\.ssh/id_rsa|\.ssh/id_ed25519|\.ssh/id_ecdsa|\.ssh/id_dsa|\.ssh/authorized_keys|\.ssh/known_hosts|\.aws/credentials|\.gnupg/private-keys-v1\.d)`
	tempNote        = "; deleting only paths made by mktemp or under $TMPDIR is exempt"
	tempFileNote    = "; write the code to a temp file and run that file instead"
)

func rule(num int, pattern, reason string, temp bool) Rule {
	return Rule{Num: num, Reason: reason, TempExempt: temp, re: regexp.MustCompile(pattern)}
}

// Rules returns the 59 denylist rules of shell-safety.md §2 in the order
// they are checked. Each call builds fresh values; callers that check many
// commands should keep a Denylist.
func Rules() []Rule {
	return []Rule{
		rule(1, `(?i)\brm\s+-[a-z]*[rf][a-z]*\s`, "`rm` with recursive or force flags (destructive file deletion) is on the blocked list"+tempNote, true),
		rule(2, `\brm\s+-[rfRF]\s+-[rfRF]\b`, "`rm` with separate recursive/force flags (destructive file deletion) is on the blocked list"+tempNote, true),
		rule(3, `\brm\s+(?:.*\s)?/\s*$`, "`rm` of the filesystem root `/` (destructive file deletion) is on the blocked list", false),
		rule(4, `\brm\s+(?:.*\s)?/(?:\s|$)`, "`rm` of the filesystem root `/` (destructive file deletion) is on the blocked list", false),
		rule(5, `\brm\s+(?:.*\s)?~`, "`rm` of a home-directory path `~` (destructive file deletion) is on the blocked list", false),
		rule(6, `\brm\s+.*\*`, "`rm` with a wildcard `*` (destructive file deletion) is on the blocked list"+tempNote, true),
		rule(7, `\bsudo\b`, "`sudo` (privilege escalation) is on the blocked list", false),
		rule(8, `\bsu\s`, "`su` (privilege escalation) is on the blocked list", false),
		rule(9, `\bdoas\b`, "`doas` (privilege escalation) is on the blocked list", false),
		rule(10, `\bmkfs\b`, "`mkfs` (filesystem formatting) is on the blocked list", false),
		rule(11, `\bdd\s+.*\bof=/dev/`, "`dd` writing to a device `of=/dev/…` (disk overwrite) is on the blocked list", false),
		rule(12, `\bdd\s+.*\bif=/dev/(?:zero|random|urandom)\b`, "`dd` reading from /dev/zero or /dev/random (disk fill/overwrite) is on the blocked list", false),
		rule(13, `\bshutdown\b`, "`shutdown` (system power control) is on the blocked list", false),
		rule(14, `\breboot\b`, "`reboot` (system power control) is on the blocked list", false),
		rule(15, `\bhalt\b`, "`halt` (system power control) is on the blocked list", false),
		rule(16, `\bpoweroff\b`, "`poweroff` (system power control) is on the blocked list", false),
		rule(17, `\binit\s+[0-6]\b`, "`init <runlevel>` (system power control) is on the blocked list", false),
		rule(18, `(?i)\bcurl\b.*\|\s*`+shellNames+`\b`, "`curl … | <shell>` (piping a download into an interpreter) is on the blocked list", false),
		rule(19, `(?i)\bwget\b.*\|\s*`+shellNames+`\b`, "`wget … | <shell>` (piping a download into an interpreter) is on the blocked list", false),
		rule(20, `\bcurl\b\s+(?:-s\s+)?https?://.*\|\s*\S`, "`curl <url> | …` (piping a download into another program) is on the blocked list", false),
		rule(21, `\bwget\b\s+(?:(?:-O|-qO)-?\s+)?https?://.*\|\s*\S`, "`wget <url> | …` (piping a download into another program) is on the blocked list", false),
		rule(22, `\b(?:python\d?|ruby|perl|node|deno|bun)\s+(?:-c|-e)\b`, "inline interpreter code (`python -c`, `node -e` and the like: code execution) is on the blocked list"+tempFileNote, false),
		rule(23, `\b(?:bash|sh|zsh|fish|ksh|dash)\s+-c\b`, "an inline shell script (`sh -c`, `bash -c` and the like: shell re-entry) is on the blocked list"+tempFileNote, false),
		rule(24, `\beval\s`, "`eval` (dynamic code execution) is on the blocked list", false),
		rule(25, `\bkill\s+(?:-9|-KILL|-SIGKILL)\b`, "`kill -9` (forced process termination) is on the blocked list", false),
		rule(26, `\bpkill\b`, "`pkill` (mass process termination) is on the blocked list", false),
		rule(27, `\bkillall\b`, "`killall` (mass process termination) is on the blocked list", false),
		{Num: 28, Reason: "a fork bomb (resource exhaustion) is on the blocked list", match: isForkBomb},
		rule(29, `\bwhile\s+(?:true|:)(?:\s|;|$)`, "an endless `while true` loop (resource exhaustion) is on the blocked list", false),
		rule(30, `\bchmod\s+(?:777|0777|a\+rwx|a=rwx|ugo\+rwx)\b`, "`chmod 777` (world-writable permissions) is on the blocked list", false),
		rule(31, `\bchmod\s+[ugoa]*[+=][rwxst]*s`, "`chmod` setting setuid/setgid (privilege escalation) is on the blocked list", false),
		rule(32, `\bchmod\s+[246][0-7]{3}\b`, "`chmod` with a setuid/setgid/sticky octal mode (privilege escalation) is on the blocked list", false),
		rule(33, `\bchown\s+(?:root|0)\b`, "`chown root` (ownership change to root) is on the blocked list", false),
		rule(34, `\bmount\s`, "`mount` (filesystem mounting) is on the blocked list", false),
		rule(35, `\bumount\s`, "`umount` (filesystem mounting) is on the blocked list", false),
		rule(36, `\biptables\b`, "`iptables` (firewall change) is on the blocked list", false),
		rule(37, `\bnftables\b`, "`nftables` (firewall change) is on the blocked list", false),
		rule(38, `\bufw\s`, "`ufw` (firewall change) is on the blocked list", false),
		rule(39, `\b`+readers+`\s+[^|;&]*`+sensitiveEtc, "reading /etc/passwd, /etc/shadow or /etc/sudoers (system credential access) is on the blocked list", false),
		rule(40, `\b`+readersNoCutSed+`\s+[^|;&]*`+secretFiles, "reading SSH keys, AWS credentials or GnuPG private keys (credential access) is on the blocked list", false),
		rule(41, `\bcp\b[^|;&]*`+sensitiveEtc, "copying /etc/passwd, /etc/shadow or /etc/sudoers (system credential access) is on the blocked list", false),
		rule(42, `\b(?:scp|rsync)\b[^|;&]*(?:/etc/(?:passwd|shadow|sudoers)|\.ssh/id_(?:rsa|ed25519|ecdsa|dsa)|\.ssh/authorized_keys|\.aws/credentials)`, "transferring system or SSH/AWS credential files with `scp`/`rsync` (credential exfiltration) is on the blocked list", false),
		rule(43, `\b(?:echo|printf)\b[^|;&]*>>?\s*~/\.ssh/authorized_keys`, "writing to ~/.ssh/authorized_keys (SSH backdoor) is on the blocked list", false),
		rule(44, `\btee\b[^|;&]*~/\.ssh/authorized_keys`, "`tee` into ~/.ssh/authorized_keys (SSH backdoor) is on the blocked list", false),
		rule(45, `\brm\b.*--no-preserve-root`, "`rm --no-preserve-root` (destructive file deletion) is on the blocked list", false),
		rule(46, `\bshred\b`, "`shred` (irreversible data destruction) is on the blocked list", false),
		rule(47, `\btruncate\b`, "`truncate` (irreversible data destruction) is on the blocked list", false),
		rule(48, `\bwipefs\b`, "`wipefs` (irreversible data destruction) is on the blocked list", false),
		rule(49, `\bblkdiscard\b`, "`blkdiscard` (irreversible data destruction) is on the blocked list", false),
		rule(50, `\bhdparm\b.*--security-erase\b`, "`hdparm --security-erase` (irreversible data destruction) is on the blocked list", false),
		rule(51, `(?i)\b(?:nc|ncat)\b.*(?:-e|-c)\b`, "`nc -e`/`ncat -c` (reverse shell) is on the blocked list", false),
		rule(52, `(?i)\bsocat\b.*\bEXEC:`, "`socat … EXEC:` (reverse shell) is on the blocked list", false),
		rule(53, `(?i)\bcurl\b.*&&\s*`+shellNames+`\b`, "`curl … && <shell>` (running a download) is on the blocked list", false),
		rule(54, `(?i)\bwget\b.*&&\s*`+shellNames+`\b`, "`wget … && <shell>` (running a download) is on the blocked list", false),
		rule(55, `\bcrontab\s+(?:-e|-r)\b`, "`crontab -e`/`-r` (scheduled-task change) is on the blocked list", false),
		rule(56, `\bhistory\s+(?:-c|-w|-d|-a)\b`, "`history -c` and the like (shell history tampering) is on the blocked list", false),
		rule(57, `\b(?:useradd|userdel|usermod|groupadd|groupdel|groupmod)\b`, "user and group management (`useradd`, `usermod`, `groupadd` …: account change) is on the blocked list", false),
		rule(58, `\bpasswd\s+\S`, "`passwd` (password change) is on the blocked list", false),
		rule(59, `\bvisudo\b`, "`visudo` (sudoers change) is on the blocked list", false),
	}
}

// forkBombHead finds a function definition `N() {body};rest` whose name N
// is preceded by start, whitespace or one of `;&|`. The rest of rule 28
// (body pipes N into a background N, and N is then called) needs a
// back-reference, which RE2 lacks, so isForkBomb checks it in code.
var forkBombHead = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s;&|])(\S+?)\s*\(\s*\)\s*\{([^}]*)\}\s*;\s*(\S+)`)
})

func isForkBomb(command string) bool {
	for _, m := range forkBombHead().FindAllStringSubmatch(command, -1) {
		name, body, rest := m[1], m[2], m[3]
		self := regexp.MustCompile(`\|\s*` + regexp.QuoteMeta(name) + `\s*&`)
		if self.MatchString(body) && strings.HasPrefix(rest, name) {
			return true
		}
	}
	return false
}

// Denylist is the compiled rule set. It is immutable and safe for
// concurrent use.
type Denylist struct {
	rules []Rule
}

// NewDenylist compiles the built-in rules.
func NewDenylist() *Denylist { return &Denylist{rules: Rules()} }

// Check applies the rules in order to command; the first match not excused
// by the static mktemp/$TMPDIR carve-out blocks it.
func (d *Denylist) Check(command string) (blocked bool, reason string) {
	r, ok := d.Match(command)
	return ok, r.Reason
}

// Match is Check returning the blocking rule itself. It applies the
// rules to the text as written, then to the normalised forms of each
// simple command and redirection in it (denyargv.go).
func (d *Denylist) Match(command string) (Rule, bool) {
	if r, ok := d.match(command, staticTempOnly); ok {
		return r, true
	}
	return d.matchParsed(command, staticTempOnly)
}

func (d *Denylist) match(command string, tempOnly func(string) bool) (Rule, bool) {
	exempt := -1 // computed at most once: -1 unknown, 0 no, 1 yes
	for _, r := range d.rules {
		if !r.Matches(command) {
			continue
		}
		if r.TempExempt {
			if exempt < 0 {
				exempt = 0
				if tempOnly(command) {
					exempt = 1
				}
			}
			if exempt == 1 {
				continue
			}
		}
		return r, true
	}
	return Rule{}, false
}

// CheckDenylist applies the built-in denylist to command. The reason names
// the construct and category; BlockMessage turns it into the tool's error.
func CheckDenylist(command string) (blocked bool, reason string) {
	return builtin().Check(command)
}

// builtin is compiled on first use, not at start-up (59 regexps cost
// milliseconds every jazz invocation would pay); a Denylist is never
// modified after NewDenylist.
var builtin = sync.OnceValue(NewDenylist)

// Builtin is the built-in denylist, compiled once on first use.
func Builtin() *Denylist { return builtin() }

// BlockMessage is the failed-result text for a command the denylist
// blocked, per shell-safety.md §1.
func BlockMessage(reason string) string {
	return "Command blocked by the built-in safety denylist: " + reason + ".\n\n" +
		"This is a single pattern match on the command text, not a ban on using the shell. " +
		"Approval cannot override the denylist. " +
		"If the user really wants this command run, they can run it by hand in their own terminal."
}
