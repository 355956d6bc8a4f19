package shellguard

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// progCheck says why a program's arguments (binary excluded, every word
// known exactly) do not keep it inspect-only, or "" when they do.
type progCheck func(args []string) string

// grammar checks arguments against an option grammar and then, if set,
// a rule over the parsed options and operands.
func grammar(s optSpec, rule func(parsedArgs) string) progCheck {
	return func(args []string) string {
		p, why := parseOpts(s, args)
		if why != "" {
			return why
		}
		if rule != nil {
			return rule(p)
		}
		return ""
	}
}

func anyArgs([]string) string { return "" }

func maxOperands(n int) func(parsedArgs) string {
	return func(p parsedArgs) string {
		if len(p.operands) > n {
			return fmt.Sprintf("%d operands (at most %d keep it read-only)", len(p.operands), n)
		}
		return ""
	}
}

const helpVersion = " --help --version"

// The option lists below are the programs' own (GNU coreutils 9, grep
// 3.8, sed 4.9, findutils 4.9, diffutils 3.8, file 5.44, tree 2.1,
// ripgrep 13, git 2.39), minus every option that writes a file, runs a
// program, changes system state or waits forever.
var readOnlyPrograms = sync.OnceValue(func() map[string]progCheck {
	grepSpec := opts("-E -F -G -P -e= -f= -i -y -w -x -z -s -v -V -m= -b -n -H -h -o -q -a -I -d= -D= -r -R -L -l -c -T -Z -B= -A= -C= -U" +
		" --extended-regexp --fixed-strings --basic-regexp --perl-regexp --regexp= --file= --ignore-case --no-ignore-case" +
		" --word-regexp --line-regexp --null-data --no-messages --invert-match --max-count= --byte-offset --line-number" +
		" --line-buffered --with-filename --no-filename --label= --only-matching --quiet --silent --binary-files= --text" +
		" --directories= --devices= --recursive --dereference-recursive --include= --exclude= --exclude-from= --exclude-dir=" +
		" --files-without-match --files-with-matches --count --initial-tab --null --before-context= --after-context=" +
		" --context= --group-separator= --no-group-separator --color=? --colour=? --binary" + helpVersion)
	grepSpec.numeric = true
	head := opts("-c= -n= -q -v -z --bytes= --lines= --quiet --silent --verbose --zero-terminated" + helpVersion)
	head.numeric = true
	// tail without -f/-F/--follow/--retry/--pid: they wait forever.
	tail := opts("-c= -n= -q -v -z -s= --bytes= --lines= --quiet --silent --verbose --zero-terminated --sleep-interval=" + helpVersion)
	tail.numeric = true
	seq := opts("-f= -s= -w --format= --separator= --equal-width" + helpVersion)
	seq.numeric = true // negative numbers
	sums := grammar(opts("-b -c -t -z -w --binary --check --tag --text --zero --ignore-missing --quiet --status --strict --warn"+helpVersion), nil)

	m := map[string]progCheck{
		"ls": grammar(opts("-a -A -b -B -c -C -d -D -f -F -g -G -h -H -i -I= -k -l -L -m -n -N -o -p -q -Q -r -R -s -S -t -T= -u -U -v -w= -x -X -Z -1"+
			" --all --almost-all --author --escape --block-size= --ignore-backups --color=? --directory --dired --classify=? --file-type"+
			" --format= --full-time --group-directories-first --no-group --human-readable --si --dereference-command-line"+
			" --dereference-command-line-symlink-to-dir --hide= --hyperlink=? --indicator-style= --inode --ignore= --kibibytes"+
			" --dereference --numeric-uid-gid --literal --hide-control-chars --show-control-chars --quote-name --quoting-style="+
			" --reverse --recursive --size --sort= --time= --time-style= --tabsize= --width= --context --zero"+helpVersion), nil),
		"cat":  grammar(opts("-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends --number --squeeze-blank --show-tabs --show-nonprinting"+helpVersion), nil),
		"head": grammar(head, nil),
		"tail": grammar(tail, tailRule),
		"wc":   grammar(opts("-c -m -l -L -w --bytes --chars --lines --files0-from= --max-line-length --words"+helpVersion), nil),
		"grep": grammar(grepSpec, nil), "egrep": grammar(grepSpec, nil), "fgrep": grammar(grepSpec, nil),
		"rg":   rgCheck(),
		"find": findCheck,
		"pwd":  grammar(opts("-L -P"), nil),
		"echo": anyArgs, "printf": anyArgs, "true": anyArgs, "false": anyArgs,
		"which":    grammar(opts("-a -s"), nil),
		"printenv": grammar(opts("-0 --null"+helpVersion), nil),
		"stat":     grammar(opts("-L -f -c= -t --dereference --file-system --cached= --format= --printf= --terse"+helpVersion), nil),
		"du": grammar(opts("-0 -a -B= -b -c -D -d= -H -h -k -L -l -m -P -S -s -t= -X= -x --null --all --apparent-size --block-size= --bytes"+
			" --total --dereference-args --max-depth= --files0-from= --human-readable --inodes --dereference --count-links"+
			" --no-dereference --separate-dirs --si --summarize --threshold= --time=? --time-style= --exclude-from= --exclude="+
			" --one-file-system"+helpVersion), nil),
		// df without --sync.
		"df": grammar(opts("-a -B= -h -H -i -k -l -P -t= -T -x= -v --all --block-size= --human-readable --si --inodes --local --no-sync"+
			" --output=? --portability --total --type= --print-type --exclude-type="+helpVersion), nil),
		"tr":       grammar(opts("-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1"+helpVersion), nil),
		"cut":      grammar(opts("-b= -c= -d= -f= -n -s -z --bytes= --characters= --delimiter= --fields= --complement --only-delimited --output-delimiter= --zero-terminated"+helpVersion), nil),
		"nl":       grammar(opts("-b= -d= -f= -h= -i= -l= -n= -p -s= -v= -w= --body-numbering= --section-delimiter= --footer-numbering= --header-numbering= --line-increment= --join-blank-lines= --number-format= --no-renumber --number-separator= --starting-line-number= --number-width="+helpVersion), nil),
		"basename": grammar(opts("-a -s= -z --multiple --suffix= --zero"+helpVersion), nil),
		"dirname":  grammar(opts("-z --zero"+helpVersion), nil),
		"realpath": grammar(opts("-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical --physical --quiet --relative-to= --relative-base= --strip --no-symlinks --zero"+helpVersion), nil),
		"readlink": grammar(opts("-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing --canonicalize-missing --no-newline --quiet --silent --verbose --zero"+helpVersion), nil),
		"whoami":   grammar(opts(helpVersion), maxOperands(0)),
		"id":       grammar(opts("-a -Z -g -G -n -r -u -z --context --group --groups --name --real --user --zero"+helpVersion), nil),
		"uname":    grammar(opts("-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release --kernel-version --machine --processor --hardware-platform --operating-system"+helpVersion), maxOperands(0)),
		"seq":      grammar(seq, nil),
		// diff without -l/--paginate, which runs pr.
		"diff": grammar(opts("-q -s -c -C= -u -U= -e -n -y -W= -p -F= -t -T -r -N -x= -X= -S= -i -E -Z -b -w -B -I= -a -D= -d -v"+
			" --normal --brief --report-identical-files --context=? --unified=? --ed --rcs --side-by-side --width= --left-column"+
			" --suppress-common-lines --show-c-function --show-function-line= --label= --expand-tabs --initial-tab --tabsize="+
			" --suppress-blank-empty --recursive --no-dereference --new-file --unidirectional-new-file --ignore-file-name-case"+
			" --no-ignore-file-name-case --exclude= --exclude-from= --starting-file= --from-file= --to-file= --ignore-case"+
			" --ignore-tab-expansion --ignore-trailing-space --ignore-space-change --ignore-all-space --ignore-blank-lines"+
			" --ignore-matching-lines= --text --strip-trailing-cr --ifdef= --line-format= --old-line-format= --new-line-format="+
			" --unchanged-line-format= --old-group-format= --new-group-format= --unchanged-group-format= --changed-group-format="+
			" --minimal --horizon-lines= --speed-large-files --color=? --palette="+helpVersion), nil),
		"cmp":  grammar(opts("-b -i= -l -n= -s -v --print-bytes --ignore-initial= --verbose --bytes= --quiet --silent"+helpVersion), nil),
		"comm": grammar(opts("-1 -2 -3 -z --check-order --nocheck-order --output-delimiter= --total --zero-terminated"+helpVersion), nil),
		// file without -z/-Z (they run decompressors), -C (writes a
		// compiled magic file), -p (resets access times), -S (drops its
		// sandbox) and -P.
		"file": grammar(opts("-v -m= -b -c -e= -f= -F= -i -k -l -L -h -n -N -0 -r -s -d --magic-file= --brief --checking-printout"+
			" --exclude= --exclude-quiet= --files-from= --separator= --mime --apple --extension --mime-type --mime-encoding"+
			" --keep-going --list --dereference --no-dereference --no-buffer --no-pad --print0 --raw --special-files --debug"+helpVersion), nil),
		// date without -s/--set; an operand that is not +FORMAT sets the clock.
		"date": grammar(opts("-d= -f= -I=? -R -r= -u --date= --debug --file= --iso-8601=? --resolution --rfc-email --rfc-3339= --reference= --utc --universal"+helpVersion),
			func(p parsedArgs) string {
				for _, o := range p.operands {
					if !strings.HasPrefix(o, "+") {
						return fmt.Sprintf("the operand %q sets the clock", o)
					}
				}
				return maxOperands(1)(p)
			}),
		// hostname with an operand (or -F, -b) sets the host name.
		"hostname": grammar(opts("-f -s -d -i -I -A -a --fqdn --long --short --domain --ip-address --all-ip-addresses --all-fqdns --alias"+helpVersion), maxOperands(0)),
		// sort without -o/--output, -T (temporary files) and --compress-program.
		"sort": grammar(opts("-b -d -f -g -i -M -h -n -R -r -V -c -C -k= -m -s -S= -t= -u -z --ignore-leading-blanks --dictionary-order"+
			" --ignore-case --general-numeric-sort --ignore-nonprinting --month-sort --human-numeric-sort --numeric-sort"+
			" --random-sort --random-source= --reverse --sort= --version-sort --batch-size= --check=? --debug --files0-from="+
			" --key= --merge --stable --buffer-size= --field-separator= --parallel= --unique --zero-terminated"+helpVersion), nil),
		// uniq's second operand is the file it writes.
		"uniq": grammar(opts("-c -d -D -f= -i -s= -u -z -w= --count --repeated --all-repeated=? --skip-fields= --group=? --ignore-case"+
			" --skip-chars= --unique --zero-terminated --check-chars="+helpVersion), maxOperands(1)),
		// tree without -o (output file), -R and -H (they write HTML files).
		"tree": grammar(opts("-a -d -l -f -x -L=+ -P=+ -I=+ -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -i -A -S -n -C -X -J"+
			" --gitignore --gitfile=+ --ignore-case --matchdirs --metafirst --prune --info --infofile=+ --noreport --charset=+"+
			" --filelimit=+ --si --du --timefmt=+ --inodes --device --dirsfirst --filesfirst --sort=+ --nolinks --fromfile --fflinks"+helpVersion), nil),
		"md5sum": sums, "sha1sum": sums, "sha256sum": sums, "sha512sum": sums,
		"sed": sedCheck,
		"awk": awkCheck, "gawk": awkCheck, "mawk": awkCheck,
		"git": gitCheck,
	}
	return m
})

// tailRule refuses an operand starting with "+": GNU tail reads `tail
// +1f [FILE]` (one such word, at most one file) as its obsolete
// +NUM[bcl][f] form, whose f follows the file forever, as -f would.
func tailRule(p parsedArgs) string {
	for _, o := range p.operands {
		if strings.HasPrefix(o, "+") {
			return fmt.Sprintf("the operand %q, which GNU tail may read as its obsolete +NUM[bcl][f] form (f follows the file forever)", o)
		}
	}
	return ""
}

// rgCheck: ripgrep without --pre/--pre-glob (run a program per file),
// -z/--search-zip (run decompressors) and --hostname-bin.
func rgCheck() progCheck {
	return grammar(opts("-A= -B= -b -s -C= -c -E= -f= -l -F -L -g= -h -. -i -v -x -M= -m= -U -I -n -N -0 -o -P -p -q -e= -r= -S -a -j= -t= -T= -u -V -H -w"+
		" --after-context= --auto-hybrid-regex --before-context= --binary --block-buffered --byte-offset --case-sensitive"+
		" --color= --colors= --column --context= --context-separator= --no-context-separator --count --count-matches --crlf"+
		" --debug --trace --dfa-size-limit= --encoding= --engine= --field-context-separator= --field-match-separator= --file="+
		" --files --files-with-matches --files-without-match --fixed-strings --follow --glob= --glob-case-insensitive --heading"+
		" --hidden --iglob= --ignore-case --ignore-file= --ignore-file-case-insensitive --include-zero --invert-match --json"+
		" --line-buffered --line-number --line-regexp --max-columns= --max-columns-preview --max-count= --max-depth="+
		" --max-filesize= --mmap --multiline --multiline-dotall --no-config --no-filename --no-heading --no-ignore --no-ignore-dot"+
		" --no-ignore-exclude --no-ignore-files --no-ignore-global --no-ignore-messages --no-ignore-parent --no-ignore-vcs"+
		" --no-line-number --no-messages --no-mmap --no-pcre2-unicode --no-require-git --no-unicode --null --null-data"+
		" --one-file-system --only-matching --passthru --path-separator= --pcre2 --pcre2-version --pretty --quiet"+
		" --regex-size-limit= --regexp= --replace= --smart-case --sort= --sortr= --stats --text --threads= --trim --type="+
		" --type-add= --type-clear= --type-list --type-not= --unrestricted --vimgrep --with-filename --word-regexp"+
		" --no-unicode --unicode --pcre2-unicode"+helpVersion), nil)
}

// findPrimaries are the inspect-only parts of a find expression, with the
// number of words each takes. -exec, -execdir, -ok, -okdir, -delete,
// -fprint, -fprint0, -fprintf and -fls are not among them.
var findPrimaries = sync.OnceValue(func() map[string]int {
	m := map[string]int{}
	for _, p := range strings.Fields("-daystart -depth -d -follow -ignore_readdir_race -noignore_readdir_race -mount -xdev -noleaf" +
		" -warn -nowarn -empty -executable -false -true -readable -writable -nogroup -nouser -print -print0 -prune -quit -ls" +
		" -not -a -and -o -or ! ( ) , -help --help -version --version") {
		m[p] = 0
	}
	for _, p := range strings.Fields("-maxdepth -mindepth -amin -anewer -atime -cmin -cnewer -ctime -fstype -gid -group -ilname" +
		" -iname -inum -ipath -iregex -iwholename -links -lname -mmin -mtime -name -newer -path -perm -regex -regextype" +
		" -samefile -size -type -uid -used -user -wholename -xtype -context -printf -files0-from") {
		m[p] = 1
	}
	return m
})

var findNewerXY = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-newer[aBcm][aBcmt]$`) })

// findCheck parses find's own grammar: options, starting points, then an
// expression made only of inspect-only primaries.
func findCheck(args []string) string {
	i := 0
options:
	for i < len(args) {
		a := args[i]
		switch {
		case a == "-H" || a == "-L" || a == "-P":
			i++
		case a == "-D" && i+1 < len(args):
			i += 2
		case len(a) > 2 && strings.HasPrefix(a, "-O") && isDigits(a[2:]):
			i++
		default:
			break options
		}
	}
	for i < len(args) && !strings.HasPrefix(args[i], "-") && args[i] != "(" && args[i] != "!" && args[i] != ")" && args[i] != "," {
		i++
	}
	for i < len(args) {
		a := args[i]
		n, ok := findPrimaries()[a]
		if !ok && findNewerXY().MatchString(a) {
			n, ok = 1, true
		}
		if !ok {
			if findActions[a] {
				return "find " + a + " runs a program or writes files"
			}
			return fmt.Sprintf("the find expression word %q, which is not on its list of read-only primaries", a)
		}
		if i+n >= len(args) && n > 0 {
			return fmt.Sprintf("find %s without its argument", a)
		}
		i += 1 + n
	}
	return ""
}

// sedCheck: GNU sed without -i (in place), -f (a script file) and with
// every script in the inspect-only subset sedScriptProblem accepts.
func sedCheck(args []string) string {
	s := opts("-n -e= -l= -E -r -s -u -z --quiet --silent --debug --expression= --line-length= --posix --regexp-extended" +
		" --separate --sandbox --unbuffered --null-data" + helpVersion)
	s.optionsFirst = true
	p, why := parseOpts(s, args)
	if why != "" {
		return why
	}
	scripts := 0
	for _, o := range p.opts {
		if o.name == "-e" || o.name == "--expression" {
			scripts++
			if why := sedScriptProblem(o.value); why != "" {
				return why
			}
		}
	}
	if scripts == 0 && len(p.operands) > 0 && !p.has("--help", "--version") {
		return sedScriptProblem(p.operands[0])
	}
	return ""
}

// sedScriptProblem accepts a subset of sed that only prints: addresses
// (numbers, $, /re/, first~step, +N), !, the commands p P d D q Q = l n N
// g G h H x z F { }, s with the flags g p i I m M and a count, and y.
// Everything else (w, W, r, R, e, the s flags w and e, a/i/c text,
// labels and branches, comments) is refused rather than parsed.
func sedScriptProblem(script string) string {
	i := 0
	n := len(script)
	skipSpace := func() {
		for i < n && (script[i] == ' ' || script[i] == '\t') {
			i++
		}
	}
	address := func() string {
		switch {
		case i < n && script[i] == '$':
			i++
		case i < n && script[i] >= '0' && script[i] <= '9':
			for i < n && script[i] >= '0' && script[i] <= '9' {
				i++
			}
			if i < n && script[i] == '~' {
				i++
				for i < n && script[i] >= '0' && script[i] <= '9' {
					i++
				}
			}
		case i < n && script[i] == '/':
			end, why := sedDelimited(script, i+1, '/')
			if why != "" {
				return why
			}
			i = end
			for i < n && (script[i] == 'I' || script[i] == 'M') {
				i++
			}
		}
		return ""
	}
	for {
		for i < n && (script[i] == ' ' || script[i] == '\t' || script[i] == '\n' || script[i] == ';') {
			i++
		}
		if i >= n {
			return ""
		}
		start := i
		if why := address(); why != "" {
			return why
		}
		skipSpace()
		if i > start && i < n && script[i] == ',' {
			i++
			skipSpace()
			if i < n && (script[i] == '+' || script[i] == '~') {
				i++
				for i < n && script[i] >= '0' && script[i] <= '9' {
					i++
				}
			} else if why := address(); why != "" {
				return why
			}
			skipSpace()
		}
		for i < n && script[i] == '!' {
			i++
			skipSpace()
		}
		if i >= n {
			return "a sed address without a command"
		}
		c := script[i]
		i++
		switch c {
		case 'p', 'P', 'd', 'D', '=', 'n', 'N', 'g', 'G', 'h', 'H', 'x', 'z', 'F', '{', '}':
		case 'q', 'Q', 'l':
			skipSpace()
			for i < n && script[i] >= '0' && script[i] <= '9' {
				i++
			}
		case 's', 'y':
			if i >= n {
				return "an unterminated sed " + string(c) + " command"
			}
			d := script[i]
			if d == '\\' || d == '\n' || d == ' ' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= '0' && d <= '9' {
				return fmt.Sprintf("the sed %c command with the delimiter %q", c, d)
			}
			end, why := sedDelimited(script, i+1, d)
			if why != "" {
				return why
			}
			if end, why = sedDelimited(script, end, d); why != "" {
				return why
			}
			i = end
			if c == 's' {
				for i < n && strings.IndexByte("gpiImM0123456789", script[i]) >= 0 {
					i++
				}
			}
		default:
			return fmt.Sprintf("the sed command %q, which is not in the print-only subset", string(c))
		}
		skipSpace()
		if i < n && script[i] != ';' && script[i] != '\n' && script[i] != '}' {
			return fmt.Sprintf("sed text %q after a command", script[i:min(n, i+8)])
		}
	}
}

// sedDelimited scans a regex or replacement from i to its closing
// delimiter d, as GNU sed's match_slash does (a backslash quotes the next
// character; brackets are not special). It returns the index after d.
func sedDelimited(s string, i int, d byte) (int, string) {
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\n':
			return 0, "a newline inside a sed regex or replacement"
		case d:
			return i + 1, ""
		}
	}
	return 0, "an unterminated sed regex or replacement"
}

// awkCheck: awk with only -F and -v before its program text, a program
// without the features that run commands, write files or choose what it
// reads, and no operand that gawk opens as a network connection.
func awkCheck(args []string) string {
	s := opts("-F= -v=")
	s.optionsFirst = true
	p, why := parseOpts(s, args)
	if why != "" {
		return why
	}
	if len(p.operands) == 0 {
		return "awk without a program"
	}
	for _, o := range p.operands[1:] {
		if strings.HasPrefix(o, "/inet") {
			return fmt.Sprintf("the awk operand %q: gawk opens /inet… names as network connections", o)
		}
	}
	return awkProgramProblem(p.operands[0])
}

// awkWords are refused anywhere in an awk program. ARGV and ARGC (and
// gawk's SYMTAB, which reaches every variable by name) are on it because
// the program can rewrite the list of files awk goes on to read, and gawk
// opens an operand named /inet/tcp/0/HOST/PORT as a network connection:
// ARGV[ARGC++] = "/inet/tcp/0/" $0 ".example/80" sends what it read out
// through a name lookup, with no getline and no redirection.
var awkWords = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`system|getline|close|fflush|extension|ARGV|ARGC|SYMTAB|@|\\\n`)
})

var awkPrint = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bprintf?\b`) })

// awkProgramProblem refuses, anywhere in the text (strings included, to
// stay simple and strict): system, getline, close, fflush, extension,
// ARGV, ARGC, SYMTAB, @
// (gawk's @load, @include and indirect calls), a line continuation, and a
// `|` that is not `||`; and any `>` after the first print or printf. An
// output redirection always follows its print textually, so this holds
// without knowing where a statement ends (a string or regex holding `}`
// or `;` cannot hide one); a `>` before every print is a comparison.
func awkProgramProblem(prog string) string {
	if m := awkWords().FindString(prog); m != "" {
		return fmt.Sprintf("the awk program uses %q (it can run commands or reach outside awk)", m)
	}
	for i := 0; i < len(prog); i++ {
		if prog[i] == '|' {
			if i+1 < len(prog) && prog[i+1] == '|' {
				i++
				continue
			}
			return "a `|` in the awk program (a pipe to or from a command)"
		}
	}
	if loc := awkPrint().FindStringIndex(prog); loc != nil && strings.Contains(prog[loc[1]:], ">") {
		return "a `>` after an awk print (it may be an output redirection)"
	}
	return ""
}
