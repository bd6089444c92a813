// Command tlogcheck checks files and values written by receipts' transparency log with Go's
// golang.org/x/mod/sumdb/tlog and golang.org/x/mod/sumdb/note, an implementation receipts
// did not write. Each subcommand reads one JSON request on stdin and writes one JSON answer
// on stdout; a check that fails is reported in the answer, not by the exit status.
//
//	tlogcheck open-note   {"vkeys": [...], "note": b64}       -> {"text", "keys"} or {"error"}
//	tlogcheck sign        {"name", "text"}                     -> {"skey", "vkey", "note": b64}
//	tlogcheck tree        {"entries": [b64]}                   -> {"stored": [b64], "roots": [b64]}
//	tlogcheck check       {"stored": [b64], "records": [...], "trees": [...]}
//	tlogcheck new-tiles   {"old", "new"}                        -> {"paths": [...]}
//	tlogcheck tiles       {"dir", "vkey", "origin"}             -> {"size", "stored": [b64], "entries"}
//	tlogcheck proof       {"vkey", "origin", "proof": b64, "entry": b64} -> {"index"} or {"error"}
//
// Go's tiles live at tile/<H>/<L>/<N> and tile/<H>/data/<N>; C2SP tlog-tiles drops the
// height (always 8) and names data tiles "entries": c2spPath maps one to the other.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

const height = 8

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tlogcheck SUBCOMMAND < request.json")
		os.Exit(2)
	}
	commands := map[string]func(*json.Decoder) (any, error){
		"open-note": openNote,
		"sign":      sign,
		"tree":      tree,
		"check":     check,
		"new-tiles": newTiles,
		"tiles":     tiles,
		"proof":     proof,
	}
	command, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "tlogcheck: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
	answer, err := command(json.NewDecoder(os.Stdin))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tlogcheck:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(answer); err != nil {
		fmt.Fprintln(os.Stderr, "tlogcheck:", err)
		os.Exit(1)
	}
}

func b64(data []byte) string { return base64.StdEncoding.EncodeToString(data) }

func hashOf(s string) (tlog.Hash, error) { return tlog.ParseHash(s) }

func hashes(list []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(list))
	for i, s := range list {
		h, err := hashOf(s)
		if err != nil {
			return nil, fmt.Errorf("hash %d: %v", i, err)
		}
		out[i] = h
	}
	return out, nil
}

func strs(list []tlog.Hash) []string {
	out := make([]string, len(list))
	for i, h := range list {
		out[i] = h.String()
	}
	return out
}

func verifiers(vkeys []string) (note.Verifiers, error) {
	var list []note.Verifier
	for _, vkey := range vkeys {
		v, err := note.NewVerifier(vkey)
		if err != nil {
			return nil, fmt.Errorf("verifier key %q: %v", vkey, err)
		}
		list = append(list, v)
	}
	return note.VerifierList(list...), nil
}

func openNote(in *json.Decoder) (any, error) {
	var req struct {
		Vkeys []string `json:"vkeys"`
		Note  []byte   `json:"note"`
	}
	if err := in.Decode(&req); err != nil {
		return nil, err
	}
	known, err := verifiers(req.Vkeys)
	if err != nil {
		return nil, err
	}
	n, err := note.Open(req.Note, known)
	if err != nil {
		return map[string]string{"error": err.Error()}, nil
	}
	var keys []string
	for _, s := range n.Sigs {
		keys = append(keys, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
	}
	return map[string]any{"text": n.Text, "keys": keys}, nil
}

func sign(in *json.Decoder) (any, error) {
	var req struct{ Name, Text string }
	if err := in.Decode(&req); err != nil {
		return nil, err
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, req.Name)
	if err != nil {
		return nil, err
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: req.Text}, signer)
	if err != nil {
		return nil, err
	}
	return map[string]string{"skey": skey, "vkey": vkey, "note": b64(msg)}, nil
}

// A log kept in memory: the stored hashes, as Go's tlog computes them.
type memory []tlog.Hash

func (m memory) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(m)) {
			return nil, fmt.Errorf("no stored hash %d", x)
		}
		out[i] = m[x]
	}
	return out, nil
}

func tree(in *json.Decoder) (any, error) {
	var req struct {
		Entries [][]byte `json:"entries"`
	}
	if err := in.Decode(&req); err != nil {
		return nil, err
	}
	var stored memory
	var roots []tlog.Hash
	for n, entry := range req.Entries {
		more, err := tlog.StoredHashes(int64(n), entry, stored)
		if err != nil {
			return nil, err
		}
		stored = append(stored, more...)
		root, err := tlog.TreeHash(int64(n+1), stored)
		if err != nil {
			return nil, err
		}
		roots = append(roots, root)
	}
	return map[string][]string{"stored": strs(stored), "roots": strs(roots)}, nil
}

type claim struct {
	T     int64    `json:"t"`
	TH    string   `json:"th"`
	N     int64    `json:"n"`
	H     string   `json:"h"`
	Proof []string `json:"proof"`
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// check runs Go's checks on proofs receipts made, and makes Go's own proofs and tree hashes
// from the stored hashes receipts computed.
func check(in *json.Decoder) (any, error) {
	var req struct {
		Stored  []string `json:"stored"`
		Records []claim  `json:"records"`
		Trees   []claim  `json:"trees"`
	}
	if err := in.Decode(&req); err != nil {
		return nil, err
	}
	stored, err := hashes(req.Stored)
	if err != nil {
		return nil, err
	}
	type result struct {
		Error   string   `json:"error"`
		GoProof []string `json:"go_proof"`
		GoRoot  string   `json:"go_root"`
	}
	run := func(c claim, record bool) (result, error) {
		th, err1 := hashOf(c.TH)
		h, err2 := hashOf(c.H)
		proof, err3 := hashes(c.Proof)
		for _, err := range []error{err1, err2, err3} {
			if err != nil {
				return result{}, err
			}
		}
		var r result
		root, err := tlog.TreeHash(c.T, memory(stored))
		if err != nil {
			return r, err
		}
		r.GoRoot = root.String()
		if record {
			r.Error = errText(tlog.CheckRecord(tlog.RecordProof(proof), c.T, th, c.N, h))
			p, err := tlog.ProveRecord(c.T, c.N, memory(stored))
			if err != nil {
				return r, err
			}
			r.GoProof = strs(p)
		} else {
			r.Error = errText(tlog.CheckTree(tlog.TreeProof(proof), c.T, th, c.N, h))
			p, err := tlog.ProveTree(c.T, c.N, memory(stored))
			if err != nil {
				return r, err
			}
			r.GoProof = strs(p)
		}
		return r, nil
	}
	answer := map[string][]result{"records": {}, "trees": {}}
	for _, c := range req.Records {
		r, err := run(c, true)
		if err != nil {
			return nil, err
		}
		answer["records"] = append(answer["records"], r)
	}
	for _, c := range req.Trees {
		r, err := run(c, false)
		if err != nil {
			return nil, err
		}
		answer["trees"] = append(answer["trees"], r)
	}
	return answer, nil
}

func c2spPath(t tlog.Tile) string {
	p := strings.Replace(t.Path(), fmt.Sprintf("tile/%d/", t.H), "tile/", 1)
	return strings.Replace(p, "tile/data/", "tile/entries/", 1)
}

func newTiles(in *json.Decoder) (any, error) {
	var req struct{ Old, New int64 }
	if err := in.Decode(&req); err != nil {
		return nil, err
	}
	paths := []string{}
	for _, t := range tlog.NewTiles(height, req.Old, req.New) {
		paths = append(paths, c2spPath(t))
	}
	return map[string][]string{"paths": paths}, nil
}

// files reads tiles from a directory written in the C2SP layout.
type files struct{ dir string }

func (f files) Height() int { return height }

func (f files) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		data, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(c2spPath(t))))
		if err != nil {
			return nil, err
		}
		out[i] = data
	}
	return out, nil
}

func (f files) SaveTiles([]tlog.Tile, [][]byte) {}

// openCheckpoint opens a signed C2SP checkpoint: origin, size and root hash lines.
func openCheckpoint(msg []byte, vkey, origin string) (tlog.Tree, error) {
	known, err := verifiers([]string{vkey})
	if err != nil {
		return tlog.Tree{}, err
	}
	n, err := note.Open(msg, known)
	if err != nil {
		return tlog.Tree{}, err
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[0] != origin {
		return tlog.Tree{}, fmt.Errorf("not a checkpoint of %s: %q", origin, n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return tlog.Tree{}, err
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil {
		return tlog.Tree{}, err
	}
	return tlog.Tree{N: size, Hash: root}, nil
}

// tiles reads a published log back through Go's TileHashReader (which authenticates every
// tile against the checkpoint's root) and checks each entry bundle against level 0.
func tiles(in *json.Decoder) (any, error) {
	var req struct{ Dir, Vkey, Origin string }
	if err := in.Decode(&req); err != nil {
		return nil, err
	}
	msg, err := os.ReadFile(filepath.Join(req.Dir, "checkpoint"))
	if err != nil {
		return nil, err
	}
	t, err := openCheckpoint(msg, req.Vkey, req.Origin)
	if err != nil {
		return nil, err
	}
	reader := tlog.TileHashReader(t, files{req.Dir})
	indexes := make([]int64, tlog.StoredHashCount(t.N))
	for i := range indexes {
		indexes[i] = int64(i)
	}
	stored, err := reader.ReadHashes(indexes)
	if err != nil {
		return nil, fmt.Errorf("reading the tiles: %v", err)
	}
	root, err := tlog.TreeHash(t.N, reader)
	if err != nil || root != t.Hash {
		return nil, fmt.Errorf("tree hash through the tiles: %v %v", root, err)
	}
	entries := 0
	for n := int64(0); n*256 < t.N; n++ {
		w := t.N - n*256
		if w > 256 {
			w = 256
		}
		bundle := tlog.Tile{H: height, L: -1, N: n, W: int(w)}
		data, err := os.ReadFile(filepath.Join(req.Dir, filepath.FromSlash(c2spPath(bundle))))
		if err != nil {
			return nil, err
		}
		for i := int64(0); i < w; i++ {
			if len(data) < 2 {
				return nil, fmt.Errorf("%s: truncated", c2spPath(bundle))
			}
			size := int(data[0])<<8 | int(data[1])
			entry := data[2 : 2+size]
			data = data[2+size:]
			if tlog.RecordHash(entry) != stored[tlog.StoredHashIndex(0, n*256+i)] {
				return nil, fmt.Errorf("entry %d does not hash to its leaf", n*256+i)
			}
			entries++
		}
		if len(data) != 0 {
			return nil, fmt.Errorf("%s: %d bytes after its entries", c2spPath(bundle), len(data))
		}
	}
	return map[string]any{"size": t.N, "stored": strs(stored), "entries": entries}, nil
}

// proof checks a C2SP tlog-proof file: the signed checkpoint with note.Open, the
// inclusion of the entry with tlog.CheckRecord.
func proof(in *json.Decoder) (any, error) {
	var req struct {
		Vkey, Origin string
		Proof, Entry []byte
	}
	if err := in.Decode(&req); err != nil {
		return nil, err
	}
	head, signed, ok := bytes.Cut(req.Proof, []byte("\n\n"))
	if !ok {
		return map[string]string{"error": "no empty line"}, nil
	}
	lines := strings.Split(string(head), "\n")
	if lines[0] != "c2sp.org/tlog-proof@v1" || !strings.HasPrefix(lines[1], "index ") {
		return map[string]string{"error": "not a tlog-proof"}, nil
	}
	index, err := strconv.ParseInt(strings.TrimPrefix(lines[1], "index "), 10, 64)
	if err != nil {
		return map[string]string{"error": err.Error()}, nil
	}
	path, err := hashes(lines[2:])
	if err != nil {
		return map[string]string{"error": err.Error()}, nil
	}
	t, err := openCheckpoint(signed, req.Vkey, req.Origin)
	if err != nil {
		return map[string]string{"error": err.Error()}, nil
	}
	if err := tlog.CheckRecord(path, t.N, t.Hash, index, tlog.RecordHash(req.Entry)); err != nil {
		return map[string]string{"error": err.Error()}, nil
	}
	return map[string]any{"index": index, "size": t.N}, nil
}
