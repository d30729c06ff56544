// callGoWithFP(fp) calls the Go function cgotestCallback with %rbp set
// to fp (System V ABI: the first argument is in %rdi).
	.text
	.globl	callGoWithFP
	.type	callGoWithFP, @function
callGoWithFP:
	pushq	%rbp
	movq	%rdi, %rbp
	call	cgotestCallback
	popq	%rbp
	ret
	.size	callGoWithFP, .-callGoWithFP
	.section	.note.GNU-stack,"",@progbits
