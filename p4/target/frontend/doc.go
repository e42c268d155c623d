// Package frontend is the front end of the P4_16 target (package
// p4/target): the preprocessor (#include of the built-in <core.p4>,
// <v1model.p4> and <tna.p4> and of user files through an include path,
// object-like #define, #undef, the #if family, #error), the lexer and the
// recursive-descent parser, which produce the abstract syntax tree
// (Program and its declarations, statements and expressions). It also
// holds tna.p4's declarations (the text #include <tna.p4> stands for).
//
// It does not own name resolution, type checking or compilation: the
// target's compiler does those in one pass over this tree, because it
// compiles while it checks (see package target). Errors are *SrcError,
// "file:line:col: reason", the file being the included file where the
// error is.
//
// Limits against hostile input: programs up to 1M tokens and 16 MiB of
// source with their includes, includes 32 deep, only regular files read,
// #define bodies up to 4096 tokens, nesting up to 200 levels.
package frontend
