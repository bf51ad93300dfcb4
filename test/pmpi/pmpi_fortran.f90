! An unmodified Fortran MPI program (use mpi) for libbagua-pmpi's tests.
! Open MPI's Fortran bindings call PMPI_Allreduce directly, so only the
! interposer's Fortran symbols (mpi_allreduce_ ...) can route these calls.
! Inputs are small integers with closed-form sums: exact mode must match them
! bit for bit, q8 / fp16 within doc/pmpi.md's bound. Prints how many calls
! the interposer should route (run_pmpi.py compares with its summary).
!
!   pmpi_fortran MODE MIN_COUNT
program pmpi_fortran
  use mpi
  implicit none
  integer, parameter :: n = 3001
  real :: x(n), y(n), want(n)
  double precision :: d(n), dwant(n)
  integer :: ix(n), iwant(n)
  integer :: ierr, rank, nranks, i, request, routed, failures, min_count, provided
  character(len=16) :: mode, arg
  logical :: relaxed, exact

  call get_command_argument(1, mode)
  call get_command_argument(2, arg)
  read (arg, *) min_count
  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  exact = mode == 'exact'
  relaxed = mode /= 'off' .and. .not. exact
  routed = 0
  failures = 0

  do i = 1, n
    x(i) = real(mod(i * 7 + rank * 13, 31) - 15)
    want(i) = real(expected_sum(i))
  end do

  ! MPI_REAL, MPI_SUM, out of place: routed in every mode but off.
  call MPI_Allreduce(x, y, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (mode /= 'off') routed = routed + 1
  call check_real('MPI_REAL sum', y)

  ! In place through the Fortran MPI_IN_PLACE sentinel.
  y = x
  call MPI_Allreduce(MPI_IN_PLACE, y, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (mode /= 'off') routed = routed + 1
  call check_real('MPI_REAL sum in place', y)

  ! MPI_DOUBLE_PRECISION: exact mode only.
  d = dble(x)
  dwant = dble(want)
  call MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (exact) routed = routed + 1
  if (maxval(abs(d - dwant)) > 0) call fail('MPI_DOUBLE_PRECISION sum')

  ! MPI_INTEGER: always passed through.
  ix = int(x)
  call MPI_Allreduce(ix, iwant, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (any(iwant /= int(want))) call fail('MPI_INTEGER sum')

  ! Below the minimum count: passed through.
  call MPI_Allreduce(x, y, min_count - 1, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (maxval(abs(y(1:min_count - 1) - want(1:min_count - 1))) > 0) &
    call fail('below the minimum count')

  ! MPI_Iallreduce + MPI_Wait: routed in exact and q8 (MPI_THREAD_MULTIPLE).
  call MPI_Iallreduce(x, y, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, request, ierr)
  call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
  if ((exact .or. mode == 'q8') .and. provided == MPI_THREAD_MULTIPLE) routed = routed + 1
  call check_real('iallreduce', y)
  y = x
  call MPI_Iallreduce(MPI_IN_PLACE, y, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, request, ierr)
  call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
  if ((exact .or. mode == 'q8') .and. provided == MPI_THREAD_MULTIPLE) routed = routed + 1
  call check_real('iallreduce in place', y)

  if (ierr /= MPI_SUCCESS) call fail('ierr')
  print '(a,i0,a,i0,a,i0)', 'pmpi-test: rank ', rank, ' expects routed ', routed, &
    ' failures ', failures
  call MPI_Finalize(ierr)
  if (failures /= 0) stop 1

contains

  integer function expected_sum(i)
    integer, intent(in) :: i
    integer :: r
    expected_sum = 0
    do r = 0, nranks - 1
      expected_sum = expected_sum + mod(i * 7 + r * 13, 31) - 15
    end do
  end function expected_sum

  subroutine check_real(what, got)
    character(len=*), intent(in) :: what
    real, intent(in) :: got(n)
    real :: bound
    bound = 0
    if (mode == 'q8') bound = (2 * nranks - 1) * 30.0 / 510.0 + 1e-4
    if (mode == 'fp16') bound = 2.0**(-10) * 30 * nranks + 1e-4
    if (mode == 'sign') bound = huge(bound)
    if (maxval(abs(got - want)) > bound) call fail(what)
  end subroutine check_real

  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,i0,2a)', 'pmpi_fortran: rank ', rank, ': FAIL: ', what
    failures = failures + 1
  end subroutine fail

end program pmpi_fortran
