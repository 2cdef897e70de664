;; The scan of span-json.ts over one string of a ClickHouse answer, sixteen bytes at a time: the
;; JavaScript loop reads four. Source of text-scan-wasm.ts (npm run build:wasm writes it).
(module
  (import "answer" "memory" (memory 1))
  ;; What bytes [from, to) of the memory hold: 1 a byte JSON.stringify escapes ('"', '\', below
  ;; 0x20), 2 a byte of 0x80 or above (of a non-ASCII character), both, or 0.
  (func (export "scan") (param $from i32) (param $to i32) (result i32)
    (local $bytes v128) (local $escape v128) (local $high v128) (local $found i32) (local $byte i32)
    (block $sixteens
      (loop $sixteen
        (br_if $sixteens (i32.gt_u (i32.add (local.get $from) (i32.const 16)) (local.get $to)))
        (local.set $bytes (v128.load (local.get $from)))
        (local.set $escape (v128.or (local.get $escape)
          (v128.or
            (i8x16.lt_u (local.get $bytes) (i8x16.splat (i32.const 0x20)))
            (v128.or
              (i8x16.eq (local.get $bytes) (i8x16.splat (i32.const 0x22)))
              (i8x16.eq (local.get $bytes) (i8x16.splat (i32.const 0x5c)))))))
        (local.set $high (v128.or (local.get $high) (local.get $bytes)))
        (local.set $from (i32.add (local.get $from) (i32.const 16)))
        (br $sixteen)))
    (local.set $found (i32.or
      (v128.any_true (local.get $escape))
      (i32.shl (i32.ne (i8x16.bitmask (local.get $high)) (i32.const 0)) (i32.const 1))))
    (block $ones
      (loop $one
        (br_if $ones (i32.ge_u (local.get $from) (local.get $to)))
        (local.set $byte (i32.load8_u (local.get $from)))
        (if (i32.ge_u (local.get $byte) (i32.const 0x80))
          (then (local.set $found (i32.or (local.get $found) (i32.const 2)))))
        (if (i32.or (i32.lt_u (local.get $byte) (i32.const 0x20))
                    (i32.or (i32.eq (local.get $byte) (i32.const 0x22)) (i32.eq (local.get $byte) (i32.const 0x5c))))
          (then (local.set $found (i32.or (local.get $found) (i32.const 1)))))
        (local.set $from (i32.add (local.get $from) (i32.const 1)))
        (br $one)))
    (local.get $found)))
